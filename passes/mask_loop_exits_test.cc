// Early exits (`stop`, `active`): the interpreter stops (carries kept, ys slots zero);
// mask-loop-exits and unroll-scans give the same values with every iteration masked;
// the shape rule pins what stop and active must name.
#include "passes/mask_loop_exits.h"

#include <gtest/gtest.h>

#include "ir/scan.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/infer_types.h"
#include "passes/unroll_scans.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/random_inputs.h"

namespace weft {
namespace {
namespace mask_loop_exits_test {  // this file's names, apart in its package's unity test

StatusOr<Graph> parse(const std::string& text) {
  WEFT_ASSIGN_OR_RETURN(Graph g, parse_graph(text, "mask_loop_exits_test.cc"));
  WEFT_RETURN_IF_ERROR(InferTypesPass().run(g).status());
  return g;
}

// passes/testdata/loop_exits.wir: a loop that stops after three of six iterations, and a
// reversed one that runs where %on is true (slots 1 and 4 skipped here).
StatusOr<Graph> exits() {
  WEFT_ASSIGN_OR_RETURN(Graph g, read_graph_file("passes/testdata/loop_exits.wir"));
  WEFT_RETURN_IF_ERROR(InferTypesPass().run(g).status());
  return g;
}

std::vector<Tensor> inputs(const Graph& g) {
  std::vector<Tensor> in = testing::random_inputs(g, 3);
  for (int64_t i = 0; i < 6; ++i) in[2].set_double(i, i == 1 || i == 4 ? 0 : 1);
  return in;
}

TEST(LoopExits, TheInterpreterStopsAndSkips) {
  auto g = exits();
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  auto r = reference::run(*g, inputs(*g));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->outputs[2].get_double(0), 3.0);  // three iterations ran
  const Tensor& ys = r->outputs[1];
  for (int64_t e = 0; e < 6; ++e) {
    EXPECT_NE(ys.get_double(2 * 6 + e), 0.0) << "slot 2 ran";
    EXPECT_EQ(ys.get_double(3 * 6 + e), 0.0) << "slot 3 did not run";
    EXPECT_EQ(ys.get_double(5 * 6 + e), 0.0) << "slot 5 did not run";
  }
  // The last carry is the third iteration's output.
  for (int64_t e = 0; e < 6; ++e) EXPECT_EQ(r->outputs[0].get_double(e), ys.get_double(2 * 6 + e));
  const Tensor& zs = r->outputs[4];
  for (int64_t e = 0; e < 6; ++e) {
    EXPECT_EQ(zs.get_double(1 * 6 + e), 0.0);
    EXPECT_EQ(zs.get_double(4 * 6 + e), 0.0);
    EXPECT_NE(zs.get_double(3 * 6 + e), 0.0);
  }
  // Skipped slots 4 and 1 leave the carry: slot 0 (the last, reversed) adds to slot 2's.
}

TEST(LoopExits, MaskedAndUnrolledGiveTheSameValues) {
  auto g = exits();
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  const std::vector<Tensor> in = inputs(*g);
  auto want = reference::run(*g, in);
  ASSERT_TRUE(want.ok());
  Graph masked = *g;
  auto changed = MaskLoopExitsPass().run(masked);
  ASSERT_TRUE(changed.ok() && *changed);
  ASSERT_TRUE(verify(masked).ok()) << verify(masked).to_string();
  for (const Node& n : masked.nodes()) {
    if (n.op == Op::Scan) {
      EXPECT_FALSE(scan_exit(n).any()) << "exits masked";
    }
  }
  Graph unrolled = *g;
  ASSERT_TRUE(UnrollScansPass().run(unrolled).ok());
  for (const Graph* other : {&masked, &unrolled}) {
    auto got = reference::run(*other, in);
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    for (size_t k = 0; k < want->outputs.size(); ++k) {
      EXPECT_EQ(got->outputs[k].to_doubles(), want->outputs[k].to_doubles()) << "output " << k;
    }
  }
}

TEST(LoopExits, StopAndActiveMustNameBoolFlags) {
  auto bad_stop = parse(R"(graph @f(%h0: f32[2]) -> (f32[2]) {
  %h = scan(%h0) {carries=1, length=3, stop=0} : f32[2] ({
    ^c(%h1: f32[2]):
      %h2 = sin(%h1) : f32[2]
      return %h2
  })
  return %h
}
)");
  ASSERT_FALSE(bad_stop.ok());
  EXPECT_NE(bad_stop.error().message.find("stop=0 must name a bool[] carry (0..0), but that carry is f32[2]"),
            std::string::npos)
      << bad_stop.error().to_string();
  auto bad_active = parse(R"(graph @f(%h0: f32[2], %xs: f32[3,2]) -> (f32[2]) {
  %h = scan(%h0, %xs) {carries=1, length=3, active=0} : f32[2] ({
    ^c(%h1: f32[2], %x1: f32[2]):
      %h2 = add(%h1, %x1) : f32[2]
      return %h2
  })
  return %h
}
)");
  ASSERT_FALSE(bad_active.ok());
  EXPECT_NE(bad_active.error().message.find("active=0 must name a bool[3] xs (0..0), but that xs is f32[3,2]"),
            std::string::npos)
      << bad_active.error().to_string();
}

}  // namespace mask_loop_exits_test
}  // namespace
}  // namespace weft
