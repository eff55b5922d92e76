// fuse-elementwise's kernels that share their work (passes/fuse_elementwise.h, "Parts of
// one concat"): the parts of one concat over one iteration space as one kernel, readers
// joining their producer's kernel, and the cases that must stay apart. Each merged graph
// computes what the unfused one does, bit for bit, on the reference interpreter.
#include <gtest/gtest.h>

#include <random>

#include "passes/fuse_elementwise.h"
#include "passes/pass_testing.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

// `text` fused by `pass`, printed (run_pass_on_text), after checking that the fused graph
// computes every output as the unfused one does on the interpreter.
std::string fused_and_checked(FuseElementwisePass& pass, std::string_view text) {
  StatusOr<Graph> before = parse_graph(text, "test.wir");
  if (!before.ok()) return before.error().to_string();
  Graph after = *before;
  StatusOr<bool> changed = pass.run(after);
  if (!changed.ok()) return changed.error().to_string();
  std::mt19937 rng(3);
  std::vector<Tensor> inputs;
  for (const Input& in : before->inputs()) {
    Tensor t(before->type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, std::uniform_real_distribution<>(-1, 1)(rng));
    inputs.push_back(std::move(t));
  }
  auto want = reference::run(*before, inputs);
  auto got = reference::run(after, inputs);
  EXPECT_TRUE(want.ok() && got.ok());
  if (want.ok() && got.ok()) {
    for (size_t o = 0; o < want->outputs.size(); ++o) EXPECT_EQ(want->outputs[o], got->outputs[o]) << "output " << o;
  }
  return run_pass_on_text(pass, text);
}

int fused_nodes(FuseElementwisePass& pass, std::string_view text) {
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  EXPECT_TRUE(g.ok());
  if (!g.ok() || !pass.run(*g).ok()) return -1;
  int n = 0;
  for (const Node& node : g->nodes()) n += node.op == Op::Fused;
  return n;
}

// Two gates' gradients from one shared value, concatenated for a GEMM (a recurrent
// cell's backward): one kernel computes the shared value once and stores both parts;
// %a, read after the root (returned) too, is one more result as before.
constexpr char kTwoParts[] = R"(graph @f(%x: f32[4,8], %y: f32[4,8], %w: f32[16,8]) {
  %s = mul(%x, %y) : f32[4,8]
  %a = tanh(%s) : f32[4,8]
  %b = exp(%s) : f32[4,8]
  %c = concat(%a, %b) {axis=1} : f32[4,16]
  %m = matmul(%c, %w) : f32[4,8]
  return %m, %a
})";

TEST(FuseElementwisePartsTest, PartsOfOneConcatAreOneKernel) {
  FuseElementwisePass pass;
  EXPECT_EQ(fused_and_checked(pass, kTwoParts),
            R"(graph @f(%x: f32[4,8], %y: f32[4,8], %w: f32[16,8]) -> (f32[4,8], f32[4,8]) {
  %b, %a = fused(%x, %y) : f32[4,8], f32[4,8] ({
    ^body(%0: f32[4,8], %1: f32[4,8]):
      %t0 = mul(%0, %1) : f32[4,8]
      %t1 = tanh(%t0) : f32[4,8]
      %t2 = exp(%t0) : f32[4,8]
      return %t2, %t1
  })
  %c = concat(%a, %b) {axis=1} : f32[4,16]
  %m = matmul(%c, %w) : f32[4,8]
  return %m, %a
}
)");
  // As before merge_parts: %s leaves %a's kernel for %b's.
  FuseOptions options;
  options.merge_parts = false;
  FuseElementwisePass apart(options);
  EXPECT_EQ(fused_nodes(apart, kTwoParts), 2);
}

// The parts of two concats that share one (a GRU's r and z gradients, in the gates'
// gradient and in the one stacked for the weight gradients, whose third part is read by
// the other's) are one kernel: four parts, five results with the shared value's.
TEST(FuseElementwisePartsTest, ConcatsSharingAPartShareTheKernel) {
  FuseElementwisePass pass;
  EXPECT_EQ(fused_and_checked(pass, R"(graph @f(%x: f32[4,8], %y: f32[4,8], %r: f32[4,8]) {
  %z = mul(%x, %y) : f32[4,8]
  %n = tanh(%x) : f32[4,8]
  %nr = mul(%n, %r) : f32[4,8]
  %c1 = concat(%z, %nr) {axis=1} : f32[4,16]
  %c2 = concat(%z, %n) {axis=1} : f32[4,16]
  return %c1, %c2
})"),
            R"(graph @f(%x: f32[4,8], %y: f32[4,8], %r: f32[4,8]) -> (f32[4,16], f32[4,16]) {
  %nr, %z, %n = fused(%x, %y, %r) : f32[4,8], f32[4,8], f32[4,8] ({
    ^body(%0: f32[4,8], %1: f32[4,8], %2: f32[4,8]):
      %t0 = mul(%0, %1) : f32[4,8]
      %t1 = tanh(%0) : f32[4,8]
      %t2 = mul(%t1, %2) : f32[4,8]
      return %t2, %t0, %t1
  })
  %c1 = concat(%z, %nr) {axis=1} : f32[4,16]
  %c2 = concat(%z, %n) {axis=1} : f32[4,16]
  return %c1, %c2
}
)");
}

// Must not merge: parts over different iteration spaces ([4,8] and [4,4]), and a part
// read before the root by a node leading back to a part (%a's GEMM feeds %b: one kernel
// would need its own result first).
TEST(FuseElementwisePartsTest, PartsOfOtherSpacesOrReadOnTheWayStayApart) {
  FuseElementwisePass pass;
  EXPECT_EQ(fused_nodes(pass, R"(graph @f(%x: f32[4,8], %y: f32[4,4]) {
  %a = tanh(%x) : f32[4,8]
  %b = exp(%y) : f32[4,4]
  %c = concat(%a, %b) {axis=1} : f32[4,12]
  return %c
})"),
            2);
  EXPECT_EQ(fused_and_checked(pass, R"(graph @f(%x: f32[4,8], %y: f32[4,8], %v: f32[8,8]) {
  %a = tanh(%x) : f32[4,8]
  %p = matmul(%a, %v) : f32[4,8]
  %b = mul(%p, %y) : f32[4,8]
  %c = concat(%a, %b) {axis=1} : f32[4,16]
  return %c
})"),
            R"(graph @f(%x: f32[4,8], %y: f32[4,8], %v: f32[8,8]) -> (f32[4,16]) {
  %a = fused(%x) : f32[4,8] ({
    ^body(%0: f32[4,8]):
      %t0 = tanh(%0) : f32[4,8]
      return %t0
  })
  %p = matmul(%a, %v) : f32[4,8]
  %b = fused(%p, %y) : f32[4,8] ({
    ^body(%0: f32[4,8], %1: f32[4,8]):
      %t0 = mul(%0, %1) : f32[4,8]
      return %t0
  })
  %c = concat(%a, %b) {axis=1} : f32[4,16]
  return %c
}
)");
}

// Parts whose kernel would close a cycle through another kernel: %a's reader %u joins
// %r's kernel with %h, which %b reads, so {a, b} and {u, h, r} would each need the other
// first. Grouping is redone without parts (%a then joins %r's kernel too, read by the
// concat after it), and %b, reading only %h, which no one else reads, joins that kernel
// as a reader: one kernel, computing what the graph does.
TEST(FuseElementwisePartsTest, PartsClosingACycleThroughAnotherKernelAreRegrouped) {
  FuseElementwisePass pass;
  constexpr char kText[] = R"(graph @f(%x: f32[4,8], %y: f32[4,8]) {
  %a = tanh(%x) : f32[4,8]
  %u = exp(%a) : f32[4,8]
  %h = neg(%y) : f32[4,8]
  %r = add(%u, %h) : f32[4,8]
  %b = mul(%h, %y) : f32[4,8]
  %c = concat(%a, %b) {axis=1} : f32[4,16]
  return %c, %r
})";
  EXPECT_EQ(fused_nodes(pass, kText), 1);
  fused_and_checked(pass, kText);
}

// Two parts from one shared value %d, concatenated for a GEMM, then `reader`'s lines.
std::string with_reader(const char* reader) {
  return std::string(R"(graph @f(%x: f32[4,8], %y: f32[4,8], %w: f32[16,8]) {
  %d = mul(%x, %y) : f32[4,8]
  %a = tanh(%d) : f32[4,8]
  %b = exp(%d) : f32[4,8]
  %c = concat(%a, %b) {axis=1} : f32[4,16]
  %m = matmul(%c, %w) : f32[4,8]
)") + reader + "}\n";
}

// A reader of values that only the parts' kernel reads joins it (an LSTM's next cell
// gradient dc·f beside the gates' gradients): %e reads %d, which then no kernel stores.
TEST(FuseElementwisePartsTest, AReaderOfValuesNoOneElseReadsJoinsTheirKernel) {
  FuseElementwisePass pass;
  EXPECT_EQ(fused_and_checked(pass, with_reader("  %e = mul(%d, %y) : f32[4,8]\n  return %m, %e\n")),
            R"(graph @f(%x: f32[4,8], %y: f32[4,8], %w: f32[16,8]) -> (f32[4,8], f32[4,8]) {
  %e, %a, %b = fused(%x, %y) : f32[4,8], f32[4,8], f32[4,8] ({
    ^body(%0: f32[4,8], %1: f32[4,8]):
      %t0 = mul(%0, %1) : f32[4,8]
      %t1 = tanh(%t0) : f32[4,8]
      %t2 = exp(%t0) : f32[4,8]
      %t3 = mul(%t0, %1) : f32[4,8]
      return %t3, %t1, %t2
  })
  %c = concat(%a, %b) {axis=1} : f32[4,16]
  %m = matmul(%c, %w) : f32[4,8]
  return %m, %e
}
)");
}

// Readers that must stay apart: one reading the GEMM after the producer (a GRU's dh sum:
// joined, the kernel would read its own concat's product), and one reading a value a
// library op reads too (an optimizer update of a gradient also summed: merge-updates
// wants it alone; joined, the value would still be stored), which joins once the sum is
// gone.
TEST(FuseElementwisePartsTest, ReadersOfLaterOrSharedValuesStayApart) {
  FuseElementwisePass pass;
  EXPECT_EQ(fused_nodes(pass, with_reader("  %e = add(%d, %m) : f32[4,8]\n  return %e\n")),
            2);
  for (const auto& [sum, kernels] : {std::pair{"  %s = sum(%g) : f32[]\n", 2}, std::pair{"", 1}}) {
    const std::string text = std::string("graph @f(%x: f32[4,8], %y: f32[4,8]) {\n  %g = tanh(%x) : f32[4,8]\n"
                                         "  %h = exp(%g) : f32[4,8]\n") +
                             sum + "  %u = mul(%g, %y) : f32[4,8]\n  return %h, %u\n}\n";
    SCOPED_TRACE(text);
    EXPECT_EQ(fused_nodes(pass, text), kernels);
    fused_and_checked(pass, text);
  }
}

}  // namespace
}  // namespace weft
