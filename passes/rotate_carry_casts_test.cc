// rotate-carry-casts (passes/rotate_carry_casts.h): loops autocast to bf16 keep their
// values and gradients bit for bit once their carries' casts are rotated, on the reference
// interpreter and the cpu backend; a rotated loop's gradient against finite differences;
// and the suite's gru_seq and lstm_seq bf16 steps run no cast kernel per iteration (the
// counts pinned, for the cpu and the CUDA lowering; beside them, residual_tower's and
// gated_routing's, which autodiff's f32 sums of half cotangents move).
#include "passes/rotate_carry_casts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/models.h"
#include "codegen/cpu_backend.h"
#include "codegen/cuda_program.h"
#include "codegen/lower.h"
#include "frontend/training.h"
#include "ir/verifier.h"
#include "passes/autocast.h"
#include "passes/loop_testing.h"
#include "runtime/reference/testing/random_inputs.h"

namespace weft {
namespace {
namespace rotate_carry_casts_test {  // this file's names, apart in its package's unity test

/// A GRU-like cell, h' = n + z·(h - n) with z = σ(a), n = tanh(a), a = h·W + x: the carry
/// is read by a product (low, once autocast) and by the update (f32). `attrs` adds to
/// the loop's; `active` adds a bool[5] xs that masks iterations.
std::string cell(const std::string& attrs, bool active) {
  const std::string on = active ? ", %on" : "", on_param = active ? ", %o: bool[]" : "";
  return R"(graph @cell(%w: f32[6,6] {param}, %h0: f32[3,6], %xs: f32[5,3,6])" +
         std::string(active ? ", %on: bool[5]" : "") + R"() {
  %h, %hs = scan(%w, %h0, %xs)" + on + R"() {consts=1, carries=1, length=5)" + attrs +
         R"(} : f32[3,6], f32[5,3,6] ({
    ^body(%cw: f32[6,6], %ch: f32[3,6], %cx: f32[3,6])" + on_param + R"():
      %m = matmul(%ch, %cw) : f32[3,6]
      %a = add(%m, %cx) : f32[3,6]
      %z = sigmoid(%a) : f32[3,6]
      %n = tanh(%a) : f32[3,6]
      %d = sub(%ch, %n) : f32[3,6]
      %zd = mul(%z, %d) : f32[3,6]
      %h2 = add(%n, %zd) : f32[3,6]
      return %h2, %h2
  })
  %sq = mul(%hs, %hs) : f32[5,3,6]
  %l = sum(%sq) : f32[]
  return %l, %h
})";
}

/// A loop whose body runs a loop on its carry (the inner carry cast for its product).
constexpr char kNested[] = R"(graph @nested(%w: f32[5,5] {param}, %a0: f32[3,5], %xs: f32[4,3,5]) {
  %a, %ys = scan(%w, %a0, %xs) {consts=1, carries=1, length=4} : f32[3,5], f32[4,3,5] ({
    ^outer(%ow: f32[5,5], %oa: f32[3,5], %ox: f32[3,5]):
      %in = scan(%ow, %oa) {consts=1, carries=1, length=2} : f32[3,5] ({
        ^inner(%iw: f32[5,5], %ia: f32[3,5]):
          %m = matmul(%ia, %iw) : f32[3,5]
          %t = tanh(%m) : f32[3,5]
          %r = add(%t, %ia) : f32[3,5]
          return %r
      })
      %s = add(%in, %ox) : f32[3,5]
      return %s, %s
  })
  %sq = mul(%ys, %ys) : f32[4,3,5]
  %l = sum(%sq) : f32[]
  return %l, %a
})";

/// Products of the loop's last carry and of its stacked carries after it (an RNN's output
/// layer, a second layer's input projection): autocast casts both to bf16 after the loop,
/// which the loop's last low carry and its stacked low copies are.
constexpr char kProductAfter[] = R"(graph @after(%w: f32[4,4] {param}, %h0: f32[2,4]) {
  %h, %hs = scan(%w, %h0) {consts=1, carries=1, length=3} : f32[2,4], f32[3,2,4] ({
    ^body(%cw: f32[4,4], %ch: f32[2,4]):
      %m = matmul(%ch, %cw) : f32[2,4]
      %t = tanh(%m) : f32[2,4]
      %h2 = add(%t, %ch) : f32[2,4]
      return %h2, %h2
  })
  %p = matmul(%h, %w) : f32[2,4]
  %r = reshape(%hs) {shape=[6,4]} : f32[6,4]
  %q = matmul(%r, %w) : f32[6,4]
  %lp = sum(%p) : f32[]
  %lq = sum(%q) : f32[]
  %l = add(%lp, %lq) : f32[]
  return %l
})";

struct Case {
  const char* name;
  std::string text;
};

std::vector<Case> cases() {
  return {{"cell", cell("", false)},
          {"cell_reversed", cell(", reverse=true", false)},
          {"cell_active", cell(", active=1", true)},
          {"nested", kNested},
          {"product_after", kProductAfter}};
}


Graph parse(const std::string& text) { return parse_typed(text, "rotate_carry_casts_test.cc"); }

Graph rotated(const Graph& g, bool expect_change = true) {
  Graph out = g;
  StatusOr<bool> changed = RotateCarryCastsPass().run(out);
  EXPECT_TRUE(changed.ok()) << changed.error().to_string();
  EXPECT_EQ(changed.ok() && *changed, expect_change);
  EXPECT_TRUE(verify(out).ok()) << verify(out).to_string();
  return out;
}

Graph bf16(const Graph& g) {
  Graph low = g;
  WEFT_CHECK(AutocastPass(DType::bf16).run(low).ok(), "autocast");
  return low;
}

/// Casts of a carry parameter inside loop bodies (nested ones included), and the loops'
/// carries, summed.
void count_carry_casts(const Graph& g, int& casts, int64_t& carries) {
  for (const Node& n : g.nodes()) {
    if (n.op != Op::Scan) continue;
    const Graph& body = *n.body;
    const int64_t consts = n.int_attr("consts");
    carries += n.int_attr("carries");
    for (const Node& b : body.nodes()) {
      const int in = b.op == Op::Cast ? body.input_index(b.operands[0]) : -1;
      casts += in >= consts && in < consts + n.int_attr("carries");
    }
    count_carry_casts(body, casts, carries);
  }
}

std::vector<Tensor> run_cpu(const Graph& g, const std::vector<Tensor>& inputs) {
  auto ex = codegen::compile_for_cpu(g);
  EXPECT_TRUE(ex.ok()) << ex.error().to_string();
  if (!ex.ok()) return {};
  for (size_t k = 0; k < inputs.size(); ++k) EXPECT_TRUE((*ex)->set_input(static_cast<int>(k), inputs[k]).ok());
  Status ran = (*ex)->run();
  EXPECT_TRUE(ran.ok()) << ran.error().to_string();
  std::vector<Tensor> out;
  for (size_t k = 0; k < g.outputs().size(); ++k) out.push_back((*ex)->output(static_cast<int>(k)));
  EXPECT_EQ((*ex)->fallbacks(), 0);
  return out;
}

void expect_same_bits(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_TRUE(got[k] == want[k]) << "output " << k;  // the same type and bytes
  }
}

TEST(RotateCarryCasts, Bf16LoopsCastNoCarryInTheirBodies) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Graph low = bf16(parse(c.text));
    int casts = 0;
    int64_t carries = 0;
    count_carry_casts(low, casts, carries);
    EXPECT_GT(casts, 0) << "autocast no longer casts the carry in the body: what is left to rotate?";
    const int before_casts = casts;
    const int64_t before_carries = carries;
    casts = 0;
    carries = 0;
    const Graph r = rotated(low);
    count_carry_casts(r, casts, carries);
    EXPECT_EQ(casts, 0);
    // One carry per cast at least: a loop whose body runs the rotated loop casts the
    // inner loop's first low carry from its own carry, and is rotated in turn.
    EXPECT_GE(carries, before_carries + before_casts);
    rotated(r, /*expect_change=*/false);
  }
}

/// Casts of a loop's result in `g` (not in bodies).
int result_casts(const Graph& g) {
  int casts = 0;
  for (const Node& n : g.nodes()) {
    const int p = n.op == Op::Cast ? g.value(n.operands[0]).node : -1;
    casts += p >= 0 && g.node(p).op == Op::Scan;
  }
  return casts;
}

/// The loops' results in `g` that something reads, in `dtype`.
int read_results(const Graph& g, DType dtype) {
  const std::vector<int> uses = g.use_counts();
  int read = 0;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::Scan) continue;
    for (ValueId v : n.results) read += uses[v] > 0 && g.type(v).dtype == dtype;
  }
  return read;
}

TEST(RotateCarryCasts, CastsOfTheLastAndStackedCarriesAreTheLowCopies) {
  const Graph low = bf16(parse(kProductAfter));
  EXPECT_EQ(result_casts(low), 2);
  EXPECT_EQ(read_results(low, DType::bf16), 0);
  const Graph r = rotated(low);
  EXPECT_EQ(result_casts(r), 0);
  EXPECT_EQ(read_results(r, DType::bf16), 2);
  EXPECT_EQ(read_results(r, DType::f32), 0);
  // The stacked low copies are the new low carry's values: one cast to bf16 in the body,
  // returned as the low carry (output 1) and as the ys (output 2). Autodiff adds their
  // cotangents in f32 (autodiff/grad.h), so the ys needs no cast of its own.
  const auto loop = std::find_if(r.nodes().begin(), r.nodes().end(), [](const Node& n) { return n.op == Op::Scan; });
  ASSERT_NE(loop, r.nodes().end());
  const Graph& body = *loop->body;
  EXPECT_EQ(std::count_if(body.nodes().begin(), body.nodes().end(), [](const Node& n) {
              return n.op == Op::Cast && n.dtype_attr("dtype") == DType::bf16;
            }),
            1)
      << print_graph(r);
  ASSERT_EQ(body.outputs().size(), 3u);
  EXPECT_EQ(body.outputs()[2], body.outputs()[1]);
}

TEST(RotateCarryCasts, NoChangeWithoutACastOfACarry) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    rotated(parse(c.text), /*expect_change=*/false);
  }
}

/// The largest difference over the elements of `got` and `want`, relative to the largest
/// magnitude in `want`.
double difference(const Tensor& got, const Tensor& want) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    diff = std::max(diff, std::abs(got.get_double(i) - want.get_double(i)));
    scale = std::max(scale, std::abs(want.get_double(i)));
  }
  return diff / std::max(scale, 1e-30);
}

/// Gradients before and after the rotation (`backend`: what ran them).
void expect_gradients_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const char* backend,
                            double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const double d = difference(got[k], want[k]);
    std::printf("  %s gradient %zu: %.3g\n", backend, k, d);
    EXPECT_LE(d, tol) << backend << " gradient " << k;
  }
}

// The rotated loops compute the same bits forward, on the interpreter and on the cpu
// backend (each against itself before the rotation). Their gradients are the same sums
// in another order: the carry's cotangent adds the product's gradient (now the low
// carry's cotangent, widened where the previous iteration adds it) after the other terms
// rather than before, which f32 rounds differently (a few f32 units: not bf16's); on the
// cpu backend the gradient body's kernels may also group differently, which moves where
// bf16 intermediates round (passes/round_at_stores.h).
TEST(RotateCarryCasts, ValuesKeepTheirBitsGradientsTheirSums) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::printf("%s:\n", c.name);
    const Graph low = bf16(parse(c.text));
    const Graph r = rotated(low);
    const std::vector<Tensor> inputs = testing::random_inputs(low, 21);
    expect_same_bits(run_reference(r, inputs), run_reference(low, inputs));
    expect_same_bits(run_cpu(r, inputs), run_cpu(low, inputs));
    const Graph grad = gradient_of_floats(low), grad_r = gradient_of_floats(r);
    ASSERT_TRUE(verify(grad_r).ok()) << verify(grad_r).to_string();
    expect_gradients_close(run_reference(grad_r, inputs), run_reference(grad, inputs), "reference", 1e-5);
    expect_gradients_close(run_cpu(grad_r, inputs), run_cpu(grad, inputs), "cpu", 1e-5);
  }
}

// A carry read wide (f32 carry, f64 product): the rotated loop's gradient against central
// differences of its loss on the interpreter.
constexpr char kWide[] = R"(graph @wide(%w: f64[4,4] {param}, %h0: f32[2,4] {param}) {
  %h, %hs = scan(%w, %h0) {consts=1, carries=1, length=4} : f32[2,4], f32[4,2,4] ({
    ^body(%cw: f64[4,4], %ch: f32[2,4]):
      %c = cast(%ch) {dtype=f64} : f64[2,4]
      %m = matmul(%c, %cw) : f64[2,4]
      %t = tanh(%m) : f64[2,4]
      %n = cast(%t) {dtype=f32} : f32[2,4]
      %h2 = add(%n, %ch) : f32[2,4]
      return %h2, %h2
  })
  %sq = mul(%hs, %hs) : f32[4,2,4]
  %l = sum(%sq) : f32[]
  return %l
})";

TEST(RotateCarryCasts, GradientThroughARotatedLoopMatchesFiniteDifferences) {
  const Graph r = rotated(parse(kWide));
  const Graph grad = gradient_of_floats(r);
  std::vector<Tensor> inputs = testing::random_inputs(r, 22);
  for (Tensor& t : inputs) {  // small weights: the carry stays in tanh's range
    for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, 0.3 * t.get_double(i));
  }
  const std::vector<Tensor> analytic = run_reference(grad, inputs);
  ASSERT_EQ(analytic.size(), 2u);
  constexpr double kStep = 1e-2;
  for (int k = 0; k < 2; ++k) {
    for (int64_t i = 0; i < inputs[k].numel(); ++i) {
      const double x = inputs[k].get_double(i);
      std::vector<Tensor> plus = inputs, minus = inputs;
      plus[k].set_double(i, x + kStep);
      minus[k].set_double(i, x - kStep);
      const double fd = (run_reference(r, plus)[0].get_double(0) - run_reference(r, minus)[0].get_double(0)) / (2 * kStep);
      const double g = analytic[k].get_double(i);
      EXPECT_NEAR(g, fd, 1e-2 * std::max(1.0, std::abs(g))) << "input " << k << " element " << i;
    }
  }
}

/// Per step of a lowered Program: invocations (a loop and each of its body's invocations
/// times its length, nested loops too) and generated kernels that are one cast.
struct Counts {
  int64_t invocations = 0, casts = 0;
  int body_casts = 0;  ///< Cast kernels in loop bodies (each once, not per iteration).
};

bool is_lone_cast(const GeneratedKernel& k) {
  return k.body.nodes().size() == 1 && k.body.node(0).op == Op::Cast;
}

void count(const Program& root, const Program& p, int64_t times, Counts& c, bool in_body = false) {
  for (const Invocation& inv : p.code) {
    c.invocations += times;
    if (inv.kind == Invocation::Kind::loop) {
      count(root, root.bodies[inv.body], times * inv.node.int_attr("length"), c, /*in_body=*/true);
    } else if (inv.kind == Invocation::Kind::generated && is_lone_cast(root.kernels[inv.kernel])) {
      c.casts += times;
      c.body_casts += in_body;
    }
  }
}

/// The suite model's bf16 training step (cpu preset), lowered for the cpu or for CUDA,
/// counted (all zero after a failure, reported).
Counts bf16_step_counts(const char* model, bool cuda) {
  StatusOr<bench::BenchModel> m = bench::make_bench_model(model, bench::Preset::cpu);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  if (!m.ok()) return {};
  StatusOr<Trainer> t = Trainer::compile(m->net, m->inputs, m->loss, OptimizerSpec::adam(m->lr),
                                         {.backend = "reference", .precision = DType::bf16});
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  if (!t.ok()) return {};
  StatusOr<codegen::Lowering> l = lower_for(t->step_graph(), cuda);
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  if (!l.ok()) return {};
  Counts c;
  count(l->program, l->program, 1, c);
  std::printf("%s, %s: %lld cast kernels, %lld invocations per step\n", model, cuda ? "cuda" : "cpu",
              static_cast<long long>(c.casts), static_cast<long long>(c.invocations));
  return c;
}

// The suite's recurrent models' bf16 steps (cpu preset: 50 steps over time; lstm_seq has
// two layers). Before the rotation gru_seq ran 105 cast kernels per step (436 invocations
// lowered for the cpu, 389 for CUDA) and lstm_seq 307 (1052, 956): two and three per
// iteration and layer (the carry narrowed for h·W_hh in the forward body; in the gradient
// body the product's gradient widened onto the carry's cotangent, the saved carry
// narrowed for the weight's GEMM). The casts left are the step's edges (the input to
// bf16, the prediction to f32, each loop's first low carry...), none in a loop body; the
// cast of gru_seq's last h for its output layer is the loop's last low carry now, and
// lstm_seq's first layer stacks its h's low copies for the second layer. lstm_seq's
// counts are with its pre-activations saved by the forward loop (autodiff/scan_grad.cc,
// step 4; merged after this pass): the cpu's gradient trip one invocation fewer (552 →
// 453), one invocation more per step on CUDA (456 → 457). Since fuse-contraction-epilogue
// takes epilogues that widen a bf16 product to f32 (issue #30), both steps run one cast
// kernel and two invocations fewer, outside the loops (gru_seq 285 → 283 cpu, 238 → 236
// CUDA; lstm_seq 453 → 451, 457 → 455).
TEST(RotateCarryCasts, SuiteRecurrentBf16StepsRunNoCastKernelPerIteration) {
  struct Want {
    const char* model;
    int64_t casts, cpu_invocations, cuda_invocations;
  };
  for (const Want& want : {Want{"gru_seq", 3, 283, 236}, Want{"lstm_seq", 3, 451, 455}}) {
    SCOPED_TRACE(want.model);
    for (bool cuda : {false, true}) {
      SCOPED_TRACE(cuda ? "cuda" : "cpu");
      const Counts c = bf16_step_counts(want.model, cuda);
      EXPECT_EQ(c.body_casts, 0);
      EXPECT_EQ(c.casts, want.casts);
      EXPECT_EQ(c.invocations, cuda ? want.cuda_invocations : want.cpu_invocations);
    }
  }
}

// Not this pass's: the suite's bf16 steps whose gradients add half cotangents of several
// readers (autodiff/grad.h: summed in f32, rounded once). One part of such a sum is a bf16
// GEMM's result, widened for the f32 add: with fuse-contraction-epilogue taking members
// of the product's dtype only, the sum was a kernel of its own, one invocation more than
// with sums in bf16 (main at a45f782: residual_tower 139 cpu / 141 CUDA, gated_routing
// 119 / 121; 140 / 142 and 120 / 122 at 959bb14). The pass now takes the widening, the
// f32 sum and its rounding as the GEMM's epilogue (issue #30): 137 / 139 and 117 / 119,
// lower than main's too (other widened products join their GEMMs' epilogues as well).
TEST(RotateCarryCasts, SuiteBf16StepsSummingHalfCotangentsInF32) {
  struct Want {
    const char* model;
    int64_t cpu_invocations, cuda_invocations;
  };
  for (const Want& want : {Want{"residual_tower", 137, 139}, Want{"gated_routing", 117, 119}}) {
    SCOPED_TRACE(want.model);
    for (bool cuda : {false, true}) {
      SCOPED_TRACE(cuda ? "cuda" : "cpu");
      EXPECT_EQ(bf16_step_counts(want.model, cuda).invocations, cuda ? want.cuda_invocations : want.cpu_invocations);
    }
  }
}

}  // namespace rotate_carry_casts_test
}  // namespace
}  // namespace weft
