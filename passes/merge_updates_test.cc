// merge-updates (passes/merge_updates.h): the update of every parameter as one kernel
// over flat ranges, against the reference interpreter and against the same Program with
// one update kernel per parameter, over several training steps of each optimizer; which
// kernels merge when parameters are frozen or of different dtypes.
#include "passes/merge_updates.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "codegen/cpu_backend.h"
#include "codegen/kernel_compiler.h"
#include "codegen/kernel_test_util.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/pass_testing.h"

namespace weft::codegen {
namespace {

// Generated invocations that write into inputs (the updates in place), and how many
// parameters those cover.
int update_invocations(const Program& p) {
  int n = 0;
  for (const Invocation& inv : p.code) {
    n += inv.kind == Invocation::Kind::generated && inv.results[0].space == Space::input;
  }
  return n;
}

void expect_padding_zero(cpu::Executor& ex, const std::string& what);

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

struct OptimizerCase {
  std::string name;
  OptimizerSpec spec;
};

class MergedStep : public ::testing::TestWithParam<int> {};

std::vector<OptimizerCase> optimizers() {
  return {{"adam", OptimizerSpec::adam(1e-2)},
          {"adamw", OptimizerSpec::adamw(1e-2)},
          {"sgd_momentum", OptimizerSpec::sgd(0.05, /*momentum=*/0.9, /*dampening=*/0,
                                              /*weight_decay=*/1e-4)},
          {"rmsprop", OptimizerSpec::rmsprop(1e-3)},
          {"adam_clipped", OptimizerSpec::adam(1e-2).with_max_grad_norm(0.5)}};
}

// Four steps of an MLP: the merged Program's parameters and optimizer state equal the
// reference interpreter's (1e-5) and, bit for bit, those of the Program that updates
// each parameter with its own kernel.
TEST_P(MergedStep, EqualsTheReferenceAndTheUnmergedProgram) {
  const OptimizerCase c = optimizers()[GetParam()];
  auto net = FlowBuilder::from(Linear(12, 40)).through(GELU()).through(Linear(40, 5)).build();
  ASSERT_TRUE(net.ok());
  auto trainer = Trainer::compile(*net, {{"x", Type{DType::f32, {8, 12}}}},
                                  LossSpec::cross_entropy(), c.spec,
                                  {.seed = 2, .backend = "reference"});
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  const Graph& g = trainer->step_graph();

  CpuOptions merged_options, separate_options;
  separate_options.lower.merge_updates = false;
  auto merged = compile_for_cpu(g, merged_options);
  auto separate = compile_for_cpu(g, separate_options);
  ASSERT_TRUE(merged.ok()) << merged.error().to_string();
  ASSERT_TRUE(separate.ok()) << separate.error().to_string();
  const Program& p = (*merged)->program();
  // Four parameters (two weights, two biases), one structure: one update invocation.
  EXPECT_EQ(update_invocations((*separate)->program()), 4) << c.name;
  EXPECT_EQ(update_invocations(p), 1) << c.name << "\n" << p.to_string();
  EXPECT_TRUE(p.updates.empty());

  std::vector<Tensor> inputs;
  for (const Input& in : g.inputs()) {
    const std::string& name = g.value(in.value).name;
    auto v = trainer->values().find(name);
    inputs.push_back(v != trainer->values().end() ? v->second : Tensor(g.type(in.value)));
  }
  // Both Programs take the same inputs, in graph order.
  auto set_both = [&](size_t i) {
    ASSERT_TRUE((*merged)->set_input(static_cast<int>(i), inputs[i]).ok());
    ASSERT_TRUE((*separate)->set_input(static_cast<int>(i), inputs[i]).ok());
  };
  for (size_t i = 0; i < inputs.size(); ++i) ASSERT_NO_FATAL_FAILURE(set_both(i));
  std::mt19937_64 rng(7);
  for (int step = 1; step <= 4; ++step) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string& name = g.value(g.inputs()[i].value).name;
      if (g.inputs()[i].kind != InputKind::data) continue;
      if (name == "x") inputs[i] = testing::random_tensor(inputs[i].type(), rng, -2, 2);
      if (name == "weft.target") {
        for (int64_t k = 0; k < inputs[i].numel(); ++k) inputs[i].set_double(k, (k * 3 + step) % 5);
      }
      if (name == "weft.lr") inputs[i].set_double(0, c.spec.lr);
      if (name == "weft.step") inputs[i].set_double(0, step);
      ASSERT_NO_FATAL_FAILURE(set_both(i));
    }
    auto ref = reference::run(g, inputs);
    ASSERT_TRUE(ref.ok()) << ref.error().to_string();
    ASSERT_TRUE((*merged)->run().ok());
    ASSERT_TRUE((*separate)->run().ok());
    std::string why;
    EXPECT_TRUE(all_close((*merged)->output(0), ref->outputs[0], 1e-5, &why)) << why;
    for (const auto& [name, value] : ref->updated) {
      const int i = (*merged)->find_input(name);
      const Tensor mine = (*merged)->input(i);
      EXPECT_TRUE(all_close(mine, value, 1e-5, &why)) << c.name << " step " << step << " %"
                                                      << name << ": " << why;
      EXPECT_TRUE(bitwise_equal(mine, (*separate)->input(i))) << c.name << " %" << name;
      inputs[g.input_index(*g.find_value(name))] = value;
    }
    expect_padding_zero(**merged, c.name + " step " + std::to_string(step));
  }
}

// Every byte of the inputs block that belongs to no input (the padding of the flat
// ranges, which the merged kernel computes on) is still exactly zero.
void expect_padding_zero(cpu::Executor& ex, const std::string& what) {
  const Program& p = ex.program();
  const std::byte* block = static_cast<std::byte*>(ex.input_data(0)) - p.input_offsets[0];
  std::vector<bool> owned(p.inputs_bytes, false);
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    for (size_t b = 0; b < p.inputs[i].type.bytes(); ++b) owned[p.input_offsets[i] + b] = true;
  }
  int64_t nonzero = 0;
  for (int64_t b = 0; b < p.inputs_bytes; ++b) nonzero += !owned[b] && block[b] != std::byte{0};
  EXPECT_EQ(nonzero, 0) << what;
}

INSTANTIATE_TEST_SUITE_P(Optimizers, MergedStep, ::testing::Range(0, 5),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return optimizers()[info.param].name;
                         });

Graph parse(const std::string& text) { return testing::parse_typed(text); }

// One step of `g` on `inputs` on the CPU equals the reference interpreter (1e-6): every
// updated value, in the same order, and every output.
void expect_cpu_matches_reference(const Graph& g, const std::vector<Tensor>& inputs) {
  auto cpu = run_on_cpu(g, inputs);
  auto ref = reference::run(g, inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  ASSERT_EQ(cpu->updated.size(), ref->updated.size());
  for (size_t i = 0; i < ref->updated.size(); ++i) {
    std::string why;
    EXPECT_EQ(cpu->updated[i].first, ref->updated[i].first);
    EXPECT_TRUE(all_close(cpu->updated[i].second, ref->updated[i].second, 1e-6, &why))
        << ref->updated[i].first << ": " << why;
  }
  ASSERT_EQ(cpu->outputs.size(), ref->outputs.size());
  for (size_t i = 0; i < ref->outputs.size(); ++i) {
    std::string why;
    EXPECT_TRUE(all_close(cpu->outputs[i], ref->outputs[i], 1e-6, &why)) << i << ": " << why;
  }
}

// %a, %b (f32) and %c, %d (f64) are updated by the same formula, %g by another, %e is
// frozen (read, never assigned). The f32 and the f64 updates merge per dtype; %g's
// update stays alone; %e lies outside every flat range. Each gradient is also summed,
// so it is an intermediate in the arena (not fused into its update).
constexpr const char* kMixed = R"(graph @f(%a: f32[40] {param}, %b: f32[3,5] {param},
    %c: f64[7] {param}, %d: f64[2,3] {param}, %e: f32[6] {param}, %g: f32[9] {param},
    %lr: f32[], %lr64: f64[], %xa: f32[40], %xb: f32[3,5], %xc: f64[7], %xd: f64[2,3],
    %xe: f32[6], %xg: f32[9]) {
  %ga = tanh(%xa)
  %gb = tanh(%xb)
  %gc = tanh(%xc)
  %gd = tanh(%xd)
  %gg = tanh(%xg)
  %sa = sum(%ga)
  %sb = sum(%gb)
  %sc = sum(%gc)
  %sd = sum(%gd)
  %sg = sum(%gg)
  %le = mul(%e, %xe)
  %se = sum(%le)
  %ua = mul(%ga, %lr)
  %a1 = sub(%a, %ua)
  assign(%a, %a1)
  %ub = mul(%gb, %lr)
  %b1 = sub(%b, %ub)
  assign(%b, %b1)
  %uc = mul(%gc, %lr64)
  %c1 = sub(%c, %uc)
  assign(%c, %c1)
  %ud = mul(%gd, %lr64)
  %d1 = sub(%d, %ud)
  assign(%d, %d1)
  %ug = mul(%gg, %gg)
  %g1 = sub(%g, %ug)
  assign(%g, %g1)
  return %sa, %sb, %sc, %sd, %sg, %se
})";

TEST(MergeUpdatesTest, MergesPerDtypeAndLeavesFrozenAndOddOnesAlone) {
  Graph g = parse(kMixed);
  StatusOr<Lowering> l = lower_to_program(g);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  const Program& p = l->program;
  EXPECT_EQ(update_invocations(p), 3) << p.to_string();  // {a, b}, {c, d}, {g}
  EXPECT_TRUE(p.updates.empty());
  const auto offset = [&](const char* name) {
    return p.input_offsets[g.input_index(*g.find_value(name))];
  };
  // f32: %a's 40 elements round up to 48 (64-byte units of 16), then %b.
  EXPECT_EQ(offset("b") - offset("a"), 48 * 4);
  // f64: %c's 7 elements round up to 8 (units of 8 elements).
  EXPECT_EQ(offset("d") - offset("c"), 8 * 8);
  // The flat ranges come first in the inputs block; everything stays 64-byte aligned.
  for (int64_t at : p.input_offsets) EXPECT_EQ(at % 64, 0);
  // The merged invocations read the gradients as one range with the parameters' offsets.
  for (const Invocation& inv : p.code) {
    if (inv.kind != Invocation::Kind::generated || inv.results[0].space != Space::input) continue;
    const std::string first = p.inputs[inv.results[0].input].name;
    if (first == "a") {
      EXPECT_EQ(inv.results[0].type.to_string(), "f32[64]") << p.to_string();
    }
    if (first == "c") {
      EXPECT_EQ(inv.results[0].type.to_string(), "f64[16]") << p.to_string();
    }
    if (first == "g") {
      EXPECT_EQ(inv.results[0].type.to_string(), "f32[9]");
    }
  }
  const ValueId ga = *l->graph.find_value("ga"), gb = *l->graph.find_value("gb");
  const ValueId gc = *l->graph.find_value("gc"), gd = *l->graph.find_value("gd");
  EXPECT_EQ(l->plan.offset[gb] - l->plan.offset[ga], 48 * 4);
  EXPECT_EQ(l->plan.offset[gd] - l->plan.offset[gc], 8 * 8);
  EXPECT_TRUE(verify_plan(l->graph, l->plan).ok());
  // The reordered graph (members together, assigns last) is still a valid graph.
  Status valid = verify(l->graph);
  EXPECT_TRUE(valid.ok()) << valid.to_string();

  // The executor keeps every input at its offset of one block.
  auto ex = compile_for_cpu(g);
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  const int a = g.input_index(*g.find_value("a")), d = g.input_index(*g.find_value("d"));
  EXPECT_EQ(static_cast<std::byte*>((*ex)->input_data(d)) -
                static_cast<std::byte*>((*ex)->input_data(a)),
            p.input_offsets[d] - p.input_offsets[a]);

  // One step on the CPU equals the reference interpreter.
  std::mt19937_64 rng(5);
  expect_cpu_matches_reference(g, testing::random_inputs(g, rng, -1, 1));
}

// A mixed-precision step's weight copies (passes/weight_copies.h): each update also
// writes its parameter's bf16 cast into a state input it does not read. Both updates
// still merge, the copies forming a range of their own (bf16: 64-byte units of 32
// elements, so %a's 40 elements round up to 64 in every range), and one step on the CPU
// equals the reference interpreter.
TEST(MergeUpdatesTest, WeightCopiesFormARangeOfTheirOwn) {
  Graph g = parse(R"(graph @f(%a: f32[40] {param}, %b: f32[3,5] {param}, %lr: f32[],
    %xa: f32[40], %xb: f32[3,5], %ca: bf16[40] {state}, %cb: bf16[3,5] {state}) {
  %ga = tanh(%xa)
  %gb = tanh(%xb)
  %sa = sum(%ga)
  %sb = sum(%gb)
  %ua = mul(%ga, %lr)
  %a1 = sub(%a, %ua)
  assign(%a, %a1)
  %a2 = cast(%a1) {dtype=bf16}
  assign(%ca, %a2)
  %ub = mul(%gb, %lr)
  %b1 = sub(%b, %ub)
  assign(%b, %b1)
  %b2 = cast(%b1) {dtype=bf16}
  assign(%cb, %b2)
  return %sa, %sb
})");
  StatusOr<Lowering> l = lower_to_program(g);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  const Program& p = l->program;
  EXPECT_EQ(update_invocations(p), 1) << p.to_string();
  EXPECT_TRUE(p.updates.empty()) << p.to_string();
  const auto offset = [&](const char* name) {
    return p.input_offsets[g.input_index(*g.find_value(name))];
  };
  EXPECT_EQ(offset("b") - offset("a"), 64 * 4);
  EXPECT_EQ(offset("cb") - offset("ca"), 64 * 2);
  std::mt19937_64 rng(5);
  expect_cpu_matches_reference(g, testing::random_inputs(g, rng, -1, 1));
}

// An update whose result is read again in the step (here by %s after the update) cannot
// move to the end with the others: nothing merges, and the step stays correct.
TEST(MergeUpdatesTest, AnUpdateReadInTheStepDoesNotMerge) {
  Graph g = parse(R"(graph @f(%a: f32[20] {param}, %b: f32[20] {param}, %ga: f32[20],
    %gb: f32[20]) {
  %a1 = sub(%a, %ga)
  assign(%a, %a1)
  %s = sum(%a1)
  %b1 = sub(%b, %gb)
  assign(%b, %b1)
  return %s
})");
  StatusOr<Lowering> l = lower_to_program(g);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  int merged = 0;
  for (const Invocation& inv : l->program.code) {
    merged += inv.kind == Invocation::Kind::generated && inv.results[0].type.numel() > 20;
  }
  EXPECT_EQ(merged, 0) << l->program.to_string();
}

// An update that sums two partial gradients in its body (a weight used twice) reads two
// arena values per parameter: merging would keep every partial gradient alive until the
// end, so it does not merge.
TEST(MergeUpdatesTest, UpdatesSummingPartialGradientsStayAlone) {
  Graph g = parse(R"(graph @f(%a: f32[20] {param}, %b: f32[20] {param}, %x: f32[20],
    %y: f32[20], %lr: f32[]) {
  %a1g = tanh(%x)
  %a2g = exp(%x)
  %b1g = tanh(%y)
  %b2g = exp(%y)
  %s1 = sum(%a1g)
  %s2 = sum(%a2g)
  %s3 = sum(%b1g)
  %s4 = sum(%b2g)
  %ga = add(%a1g, %a2g)
  %ua = mul(%ga, %lr)
  %a1 = sub(%a, %ua)
  assign(%a, %a1)
  %gb = add(%b1g, %b2g)
  %ub = mul(%gb, %lr)
  %b1 = sub(%b, %ub)
  assign(%b, %b1)
  return %s1, %s2, %s3, %s4
})");
  StatusOr<Lowering> l = lower_to_program(g);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  EXPECT_EQ(update_invocations(l->program), 2) << l->program.to_string();
  for (const Invocation& inv : l->program.code) {
    EXPECT_NE(inv.results[0].type.to_string(), "f32[64]") << l->program.to_string();
  }
}

// Updates whose per-parameter operands are graph inputs (data) merge too: those inputs
// are laid out back to back like the parameters.
TEST(MergeUpdatesTest, DataInputsFormRangesToo) {
  Graph g = parse(R"(graph @f(%a: f32[20] {param}, %b: f32[30] {param}, %ga: f32[20],
    %gb: f32[30], %lr: f32[]) {
  %ua = mul(%ga, %lr)
  %a1 = sub(%a, %ua)
  assign(%a, %a1)
  %ub = mul(%gb, %lr)
  %b1 = sub(%b, %ub)
  assign(%b, %b1)
  %s = sum(%ga)
  return %s
})");
  StatusOr<Lowering> l = lower_to_program(g);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  EXPECT_EQ(update_invocations(l->program), 1) << l->program.to_string();
  std::mt19937_64 rng(1);
  expect_cpu_matches_reference(g, testing::random_inputs(g, rng, -1, 1));
}

// The gradients' padding lies in arena bytes that %h (exp: never zero) used before
// them; the merged kernel zeroes it first, so the parameters' padding stays zero.
TEST(MergeUpdatesTest, PaddingComputesOnZeros) {
  Graph g = parse(R"(graph @f(%a: f32[5] {param}, %b: f32[3] {param}, %x: f32[64],
    %xa: f32[5], %xb: f32[3], %lr: f32[]) {
  %h = exp(%x)
  %s = sum(%h)
  %m = max(%h)
  %ga = tanh(%xa)
  %gb = tanh(%xb)
  %sa = sum(%ga)
  %sb = sum(%gb)
  %ua = mul(%ga, %lr)
  %a1 = sub(%a, %ua)
  assign(%a, %a1)
  %ub = mul(%gb, %lr)
  %b1 = sub(%b, %ub)
  assign(%b, %b1)
  return %s, %m, %sa, %sb
})");
  StatusOr<Lowering> l = lower_to_program(g);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  const ValueId h = *l->graph.find_value("h"), ga = *l->graph.find_value("ga");
  // The premise: the gradient range reuses %h's bytes.
  ASSERT_GE(l->plan.offset[h], 0);
  ASSERT_LT(l->plan.offset[ga], l->plan.offset[h] + 256) << l->program.to_string();
  ASSERT_GE(l->plan.offset[ga] + 64, l->plan.offset[h]) << l->program.to_string();
  auto ex = compile_for_cpu(g);
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  EXPECT_EQ(update_invocations((*ex)->program()), 1);
  std::mt19937_64 rng(4);
  for (const Input& in : g.inputs()) {
    const int i = g.input_index(in.value);
    ASSERT_TRUE((*ex)->set_input(i, testing::random_tensor(g.type(in.value), rng, 1, 2)).ok());
  }
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE((*ex)->run().ok());
    expect_padding_zero(**ex, "step " + std::to_string(step));
  }
}

TEST(MergeUpdatesTest, FlattenBody) {
  Graph body = parse(R"(graph @k(%p: f32[3,4], %g: f32[3,4], %lr: f32[1]) {
  %u = mul(%g, %lr)
  %p1 = sub(%p, %u)
  return %p1
})");
  std::optional<Graph> flat = flatten_body(body, 64);
  ASSERT_TRUE(flat.has_value());
  EXPECT_EQ(print_graph(*flat),
            "graph @k(%p: f32[64], %g: f32[64], %lr: f32[]) -> (f32[64]) {\n"
            "  %u = mul(%g, %lr) : f32[64] loc(\"test.wir\":2:3)\n"
            "  %p1 = sub(%p, %u) : f32[64] loc(\"test.wir\":3:3)\n"
            "  return %p1\n"
            "}\n");
  // One formula built in two node and input orders (as the fuser may build the Adam
  // updates of two parameters) has one canonical form.
  Graph a = parse(R"(graph @k(%m: f32[5], %g: f32[5], %b: f32[]) {
  %x = mul(%m, %b)
  %y = mul(%g, %b)
  %z = add(%x, %y)
  return %z
})");
  Graph b = parse(R"(graph @k(%g: f32[7], %b: f32[], %m: f32[7]) {
  %y = mul(%g, %b)
  %x = mul(%m, %b)
  %z = add(%x, %y)
  return %z
})");
  std::vector<int> order_a, order_b;
  std::optional<Graph> fa = flatten_body(a, 1, &order_a), fb = flatten_body(b, 1, &order_b);
  ASSERT_TRUE(fa && fb);
  EXPECT_EQ(kernel_key(*fa), kernel_key(*fb));
  EXPECT_EQ(order_a, (std::vector<int>{0, 2, 1}));  // %m, %b, %g
  EXPECT_EQ(order_b, (std::vector<int>{2, 1, 0}));  // %m, %b, %g
  // A row broadcast cannot be flattened.
  Graph row = parse(R"(graph @k(%p: f32[3,4], %b: f32[4]) {
  %p1 = sub(%p, %b)
  return %p1
})");
  EXPECT_FALSE(flatten_body(row, 12).has_value());
}

// A body as deep as a long chain (a 100000-op elementwise chain fuses into one kernel):
// the canonical walk keeps its own stack (`weftc run` of such a chain crashed with a
// stack overflow in this walk, one frame per node).
TEST(MergeUpdatesTest, FlattenBodyOfALongChain) {
  constexpr int kDepth = 400000;
  Graph body("chain");
  ValueId v = body.add_input("x", Type{DType::f32, Shape({2})});
  for (int i = 0; i < kDepth; ++i) v = body.add_node(Op::Neg, {v}, {}, Location(), Type{DType::f32, Shape({2})});
  body.add_output(v);
  std::optional<Graph> flat = flatten_body(body, 8);
  ASSERT_TRUE(flat.has_value());
  ASSERT_EQ(flat->nodes().size(), static_cast<size_t>(kDepth));
  EXPECT_EQ(flat->type(flat->outputs()[0]), (Type{DType::f32, Shape({8})}));
  EXPECT_EQ(flat->node(0).operands[0], flat->inputs()[0].value);
}

// The pass alone, golden: two SGD updates of one structure (only their lengths differ)
// move together at the second one's place, their assigns to the end, and the result
// names the pair; a step whose one update has no partner is left as it is.
constexpr const char* kTwoUpdates = R"(graph @step(%w: f32[4] {param}, %b: f32[2] {param}, %gw: f32[4], %gb: f32[2], %lr: f32[]) {
  %w1 = fused(%w, %gw, %lr) : f32[4] ({
    ^body(%0: f32[4], %1: f32[4], %2: f32[]):
      %t0 = mul(%1, %2) : f32[4]
      %t1 = sub(%0, %t0) : f32[4]
      return %t1
  })
  assign(%w, %w1)
  %s = sum(%gw) : f32[]
  %b1 = fused(%b, %gb, %lr) : f32[2] ({
    ^body(%0: f32[2], %1: f32[2], %2: f32[]):
      %t0 = mul(%1, %2) : f32[2]
      %t1 = sub(%0, %t0) : f32[2]
      return %t1
  })
  assign(%b, %b1)
  return %s
})";

TEST(MergeUpdatesPassTest, MovesAGroupTogetherAndReportsIt) {
  UpdatePlan result;
  MergeUpdatesPass pass({.key = kernel_key}, &result);
  EXPECT_EQ(pass.name(), "merge-updates");
  EXPECT_EQ(run_pass_on_text(pass, kTwoUpdates),
            R"(graph @step(%w: f32[4] {param}, %b: f32[2] {param}, %gw: f32[4], %gb: f32[2], %lr: f32[]) -> (f32[]) {
  %s = sum(%gw) : f32[]
  %w1 = fused(%w, %gw, %lr) : f32[4] ({
    ^body(%0: f32[4], %1: f32[4], %2: f32[]):
      %t0 = mul(%1, %2) : f32[4]
      %t1 = sub(%0, %t0) : f32[4]
      return %t1
  })
  %b1 = fused(%b, %gb, %lr) : f32[2] ({
    ^body(%0: f32[2], %1: f32[2], %2: f32[]):
      %t0 = mul(%1, %2) : f32[2]
      %t1 = sub(%0, %t0) : f32[2]
      return %t1
  })
  assign(%w, %w1)
  assign(%b, %b1)
  return %s
}
)");
  ASSERT_EQ(result.merged.size(), 1u);
  EXPECT_EQ(result.merged[0].nodes, (std::vector<int>{1, 2}));
  EXPECT_EQ(result.merged[0].length, 32);  // each member starts 64 bytes (16 f32) apart
}

TEST(MergeUpdatesPassTest, NoPartnerNoChange) {
  MergeUpdatesPass pass({.key = kernel_key});
  std::string one = kTwoUpdates;  // the bias's update adds: another formula
  one.replace(one.rfind("sub(%0, %t0) : f32[2]"), 3, "add");
  StatusOr<Graph> before = parse_graph(one, "test.wir");
  ASSERT_TRUE(before.ok()) << before.error().to_string();
  EXPECT_EQ(run_pass_on_text(pass, one),
            print_graph(*before, PrintOptions{.locations = false}) + "(no change)\n");
  EXPECT_TRUE(pass.result().merged.empty());
}

}  // namespace
}  // namespace weft::codegen
