#include "passes/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "frontend/modules.h"
#include "frontend/training.h"
#include "ir/text.h"
#include "passes/schedule.h"

namespace weft {
namespace {

Graph parse(const char* text) {
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return std::move(g).value();
}

MemoryPlan plan(const Graph& g, PlanOptions options = {}) {
  StatusOr<MemoryPlan> p = plan_memory(g, options);
  EXPECT_TRUE(p.ok()) << p.error().to_string();
  if (!p.ok()) return {};
  Status ok = verify_plan(g, *p);
  EXPECT_TRUE(ok.ok()) << ok.to_string() << "\n" << print_graph(g);
  return std::move(p).value();
}

// %a -> %b -> %c -> %d of 1 KiB each through non-elementwise ops (no in-place): two
// buffers alternate. The output %d lives to the end.
constexpr const char* kChain = R"(graph @f(%x: f32[16,16]) {
  %a = transpose(%x) {perm=[1,0]} : f32[16,16]
  %b = transpose(%a) {perm=[1,0]} : f32[16,16]
  %c = transpose(%b) {perm=[1,0]} : f32[16,16]
  %d = transpose(%c) {perm=[1,0]} : f32[16,16]
  return %d
}
)";

TEST(MemoryPlanTest, ChainOfEqualSizesUsesTwoBuffers) {
  Graph g = parse(kChain);
  MemoryPlan p = plan(g);
  EXPECT_EQ(p.naive_bytes, 4 * 1024);
  EXPECT_EQ(p.arena_bytes, 2 * 1024);
  EXPECT_EQ(p.lower_bound_bytes, 2 * 1024);
  EXPECT_DOUBLE_EQ(p.efficiency(), 1.0);
  EXPECT_TRUE(p.in_place_nodes.empty());
  EXPECT_EQ(p.offset[*g.find_value("x")], -1);  // caller-owned
  EXPECT_NE(p.offset[*g.find_value("a")], p.offset[*g.find_value("b")]);
  EXPECT_EQ(p.offset[*g.find_value("a")], p.offset[*g.find_value("c")]);
}

TEST(MemoryPlanTest, ElementwiseChainRunsInPlaceInOneBuffer) {
  Graph g = parse(R"(graph @f(%x: f32[256]) {
  %a = exp(%x) : f32[256]
  %b = neg(%a) : f32[256]
  %c = tanh(%b) : f32[256]
  %d = mul(%c, %c) : f32[256]
  return %d
}
)");
  MemoryPlan p = plan(g);
  EXPECT_EQ(p.naive_bytes, 4 * 1024);
  EXPECT_EQ(p.arena_bytes, 1024);
  EXPECT_EQ(p.lower_bound_bytes, 1024);
  // %a cannot take over %x: graph inputs are caller-owned.
  EXPECT_EQ(p.in_place_nodes, (std::vector<int>{1, 2, 3}));
  // Without in-place reuse it is the two-buffer chain again.
  MemoryPlan q = plan(g, {.in_place = false});
  EXPECT_EQ(q.arena_bytes, 2 * 1024);
  EXPECT_TRUE(q.in_place_nodes.empty());
}

TEST(MemoryPlanTest, NoInPlaceWhenTheOperandLivesOn) {
  Graph g = parse(R"(graph @f(%x: f32[256]) {
  %a = exp(%x) : f32[256]
  %b = neg(%a) : f32[256]
  %c = add(%a, %b) : f32[256]
  return %c
}
)");
  MemoryPlan p = plan(g);
  // %b cannot take over %a (still read by %c); %c takes over %a (or %b).
  EXPECT_EQ(p.in_place_nodes, (std::vector<int>{2}));
  EXPECT_EQ(p.arena_bytes, 2 * 1024);
}

TEST(MemoryPlanTest, Diamond) {
  // %a fans out to %b (1 KiB) and %c (4 KiB), joined by a matmul-free concat.
  Graph g = parse(R"(graph @f(%x: f32[256]) {
  %a = reshape(%x) {shape=[16,16]} : f32[16,16]
  %b = transpose(%a) {perm=[1,0]} : f32[16,16]
  %c = concat(%a, %a, %a, %a) {axis=0} : f32[64,16]
  %d = concat(%b, %c) {axis=0} : f32[80,16]
  return %d
}
)");
  MemoryPlan p = plan(g);
  EXPECT_EQ(p.naive_bytes, 1024 + 1024 + 4096 + 5120);
  // At %c: %a, %b and %c live (6 KiB); at %d: %b, %c and %d (10 KiB).
  EXPECT_EQ(p.lower_bound_bytes, 1024 + 4096 + 5120);
  EXPECT_EQ(p.arena_bytes, 1024 + 4096 + 5120);
}

TEST(MemoryPlanTest, OutputsAndAssignedValuesLiveToTheEnd) {
  Graph g = parse(R"(graph @f(%x: f32[16,16], %w: f32[16,16] {param}) {
  %a = transpose(%x) {perm=[1,0]} : f32[16,16]
  %u = transpose(%w) {perm=[1,0]} : f32[16,16]
  assign(%w, %u)
  %b = transpose(%a) {perm=[1,0]} : f32[16,16]
  %c = transpose(%b) {perm=[1,0]} : f32[16,16]
  %d = transpose(%c) {perm=[1,0]} : f32[16,16]
  return %a, %d
}
)");
  MemoryPlan p = plan(g);
  // %a (output) and %u (assigned) pin two buffers; %b %c %d alternate in two more.
  EXPECT_EQ(p.arena_bytes, 4 * 1024);
  EXPECT_EQ(p.lower_bound_bytes, 4 * 1024);
  const auto off = [&](const char* name) { return p.offset[*g.find_value(name)]; };
  for (const char* v : {"b", "c", "d"}) {
    EXPECT_NE(off(v), off("a")) << v;
    EXPECT_NE(off(v), off("u")) << v;
  }
}

TEST(MemoryPlanTest, AnAssignedValueReadAfterItsAssignIsNotOverwritten) {
  // %m is assigned, then read by an elementwise node where it would otherwise die.
  Graph g = parse(R"(graph @f(%x: f32[256], %m: f32[256] {state}) {
  %a = exp(%x) : f32[256]
  %n = mul(%a, %m) : f32[256]
  assign(%m, %n)
  %y = neg(%n) : f32[256]
  return %y
}
)");
  MemoryPlan p = plan(g);
  EXPECT_EQ(p.in_place_nodes, (std::vector<int>{1}));  // %n over %a; not %y over %n
  EXPECT_NE(p.offset[*g.find_value("y")], p.offset[*g.find_value("n")]);
  EXPECT_EQ(p.arena_bytes, 2 * 1024);
}

TEST(MemoryPlanTest, SizesAreAligned) {
  Graph g = parse(R"(graph @f(%x: f32[4]) {
  %a = transpose(%x) {perm=[0]} : f32[4]
  %b = transpose(%a) {perm=[0]} : f32[4]
  return %b
}
)");
  MemoryPlan p = plan(g);
  EXPECT_EQ(p.naive_bytes, 128);
  EXPECT_EQ(p.arena_bytes, 128);
  EXPECT_EQ(plan(g, {.alignment = 16}).arena_bytes, 32);
  EXPECT_FALSE(plan_memory(g, {.alignment = 48}).ok());
  EXPECT_NE(p.report().find("planned 128 bytes"), std::string::npos) << p.report();
}

TEST(MemoryPlanTest, VerifyPlanCatchesOverlap) {
  Graph g = parse(kChain);
  MemoryPlan p = plan(g);
  p.offset[*g.find_value("b")] = p.offset[*g.find_value("a")];
  EXPECT_FALSE(verify_plan(g, p).ok());
  MemoryPlan q = plan(g);
  q.offset[*g.find_value("x")] = 0;
  EXPECT_FALSE(verify_plan(g, q).ok());
}

// Random DAGs of elementwise (in-place candidates) and other ops over a few sizes, with
// declared types: planning reads only sizes, so the shapes need not obey shape rules.
Graph random_graph(std::mt19937& rng) {
  Graph g("random");
  const std::vector<Shape> shapes = {Shape{4}, Shape{16}, Shape{64}, Shape{8, 40}};
  std::uniform_int_distribution<int> shape_pick(0, 3);
  std::vector<ValueId> values;
  for (int i = 0; i < 2; ++i) {
    values.push_back(g.add_input("in" + std::to_string(i), {DType::f32, shapes[shape_pick(rng)]}));
  }
  const int nodes = std::uniform_int_distribution<int>(1, 40)(rng);
  for (int i = 0; i < nodes; ++i) {
    // Prefer recent values so chains and in-place chances are common.
    std::uniform_int_distribution<int> pick(std::max(0, static_cast<int>(values.size()) - 6),
                                            static_cast<int>(values.size()) - 1);
    const ValueId a = values[pick(rng)], b = values[pick(rng)];
    const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
    if (kind == 0) {
      values.push_back(g.add_node(Op::Exp, {a}, {}, {}, g.type(a)));
    } else if (kind == 1) {
      values.push_back(g.add_node(Op::Add, {a, b}, {}, {}, g.type(a)));
    } else {
      values.push_back(g.add_node(Op::Matmul, {a, b}, {}, {},
                                  Type{DType::f32, shapes[shape_pick(rng)]}));
    }
  }
  std::uniform_int_distribution<int> any(2, static_cast<int>(values.size()) - 1);
  g.add_output(values.back());
  if (values.size() > 3) g.add_output(values[any(rng)]);
  return g;
}

// Three gradients of different sizes computed at different times, read together at the
// end: as a contiguous group they lie back to back at the given offsets, as one block
// live from the first definition (%ga) to the last use; %t, dead before %ga is defined,
// may share bytes with the block, while %u (live across it) may not.
constexpr const char* kGroup = R"(graph @f(%x: f32[10], %y: f32[16], %z: f32[3]) {
  %t = exp(%x) : f32[10]
  %s = sum(%t) : f32[]
  %ga = neg(%x) : f32[10]
  %u = exp(%y) : f32[16]
  %gb = tanh(%y) : f32[16]
  %gc = neg(%z) : f32[3]
  %ra = sum(%ga) : f32[]
  %rb = sum(%gb) : f32[]
  %rc = sum(%gc) : f32[]
  %ru = sum(%u) : f32[]
  return %s, %ra, %rb, %rc, %ru
}
)";

TEST(MemoryPlanTest, ContiguousGroupLiesBackToBack) {
  Graph g = parse(kGroup);
  const ValueId ga = *g.find_value("ga"), gb = *g.find_value("gb"), gc = *g.find_value("gc");
  PlanOptions options;
  options.groups = {{{ga, gb, gc}, {0, 64, 128}, 256}};  // 64 bytes of tail, as a flat range
  MemoryPlan p = plan(g, options);
  EXPECT_EQ(p.offset[gb] - p.offset[ga], 64);
  EXPECT_EQ(p.offset[gc] - p.offset[ga], 128);
  const int64_t block = p.offset[ga];
  const ValueId u = *g.find_value("u");
  EXPECT_TRUE(p.offset[u] + 64 <= block || p.offset[u] >= block + 256) << p.offset[u];
  // Without the group the three share less room: the group costs bytes, never overlap.
  MemoryPlan free_plan = plan(g);
  EXPECT_LE(free_plan.arena_bytes, p.arena_bytes);
  // At %rc: the block (its last use), %u, and the outputs %s, %ra, %rb, %rc.
  EXPECT_EQ(p.lower_bound_bytes, 256 + 5 * 64);
}

TEST(MemoryPlanTest, ContiguousGroupErrors) {
  Graph g = parse(kGroup);
  const ValueId ga = *g.find_value("ga"), gb = *g.find_value("gb"), x = *g.find_value("x");
  const auto error = [&](std::vector<ContiguousGroup> groups) {
    PlanOptions options;
    options.groups = std::move(groups);
    StatusOr<MemoryPlan> p = plan_memory(g, options);
    return p.ok() ? std::string("ok") : p.error().to_string();
  };
  EXPECT_EQ(error({{{ga, gb}, {0, 32}, 128}}),
            "error: memory planning: contiguous group 0: %gb at offset 32 is unaligned, overlaps the "
            "member before it or ends past the group's 128 bytes");
  EXPECT_EQ(error({{{gb, ga}, {0, 64}, 64}}),
            "error: memory planning: contiguous group 0: %ga at offset 64 is unaligned, overlaps the "
            "member before it or ends past the group's 64 bytes");
  EXPECT_EQ(error({{{ga, x}, {0, 64}, 128}}),
            "error: memory planning: contiguous group 0: %x is not a node result in the arena");
  EXPECT_EQ(error({{{ga}, {0}, 64}, {{ga}, {0}, 64}}),
            "error: memory planning: contiguous group 1: %ga shares its buffer with a member of a "
            "contiguous group");
  EXPECT_EQ(error({{{ga, gb}, {0}, 128}}),
            "error: memory planning: contiguous group 0 needs one offset per value and a size that is "
            "a multiple of 64 bytes");
  // verify_plan checks the layout independently of how the plan was made.
  PlanOptions options;
  options.groups = {{{ga, gb}, {0, 64}, 128}};
  MemoryPlan p = plan(g, options);
  p.groups[0].offsets[1] = 128;
  EXPECT_EQ(verify_plan(g, p).to_string(),
            "error: verify_plan: %gb is not at offset 128 of contiguous group 0");
}

TEST(MemoryPlanTest, RandomGraphsPlanWithoutOverlap) {
  std::mt19937 rng(/*seed=*/20261122);
  for (int trial = 0; trial < 500; ++trial) {
    Graph g = random_graph(rng);
    for (bool in_place : {true, false}) {
      MemoryPlan p = plan(g, {.in_place = in_place});
      EXPECT_LE(p.lower_bound_bytes, p.arena_bytes) << trial;
      EXPECT_LE(p.arena_bytes, p.naive_bytes) << trial;
    }
    // Scheduling keeps the graph plannable and never raises the peak.
    const int64_t before = *peak_live_bytes(g);
    ScheduleMemoryPass pass;
    ASSERT_TRUE(pass.run(g).ok());
    EXPECT_LE(*peak_live_bytes(g), before) << trial;
    for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
      for (ValueId o : g.node(i).operands) ASSERT_LT(g.value(o).node, i) << trial;
    }
    plan(g);
  }
}

TEST(MemoryPlanTest, TrainingStepOfASmallMlp) {
  auto net = FlowBuilder::from(Linear(784, 256)).through(ReLU()).through(Linear(256, 10)).build();
  auto trainer = Trainer::compile(*net, {{"x", f32({64, 784})}}, LossSpec::cross_entropy(),
                                  OptimizerSpec::adam());
  ASSERT_TRUE(trainer.ok()) << trainer.error().to_string();
  Graph g = trainer->step_graph();
  MemoryPlan written = plan(g);
  std::printf("training step as compiled (%zu nodes):\n%s", g.nodes().size(),
              written.report().c_str());
  const int64_t peak_before = *peak_live_bytes(g);
  ScheduleMemoryPass pass;
  StatusOr<bool> changed = pass.run(g);
  ASSERT_TRUE(changed.ok());
  MemoryPlan scheduled = plan(g);
  std::printf("after schedule-memory (changed: %d, peak %lld -> %lld bytes):\n%s", *changed,
              static_cast<long long>(peak_before), static_cast<long long>(*peak_live_bytes(g)),
              scheduled.report().c_str());
  EXPECT_LE(scheduled.lower_bound_bytes, written.lower_bound_bytes);
  EXPECT_LT(scheduled.arena_bytes, scheduled.naive_bytes);
  EXPECT_LE(scheduled.lower_bound_bytes, scheduled.arena_bytes);
  EXPECT_GE(scheduled.efficiency(), 0.9);
}

}  // namespace
}  // namespace weft
