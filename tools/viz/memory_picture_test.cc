// The memory picture: the value classification rule, the live ranges it draws, and a
// golden SVG of a small training step.
//
// To regenerate the golden file after an intended change of the picture:
//   WEFT_UPDATE_GOLDEN=1 bazel run //tools/viz:memory_picture_test
// (it rewrites tools/viz/testdata/tiny_step_memory.svg in the source tree; review the
// diff, e.g. by opening the file in a browser, before committing it).

#include "tools/viz/memory_picture.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ir/text.h"
#include "passes/infer_types.h"

namespace weft::viz {
namespace {

// One step of a one-layer network with a momentum optimizer and a model-state update,
// the backward pass written out: every buffer kind occurs.
constexpr const char* kTinyStep = R"(
graph @tiny_step(%x: f32[4,8], %w: f32[8,8] {param}, %stat: f32[8] {state},
                 %optimizer.w.momentum: f32[8,8] {state}, %lr: f32[]) -> (f32[]) {
  %h = matmul(%x, %w)
  %a = relu(%h)
  %loss = mean(%a)
  %col_mean = mean(%h) {axes=[0]}
  %stat_new = add(%stat, %col_mean)
  assign(%stat, %stat_new)
  %zero = full() {shape=[], value=0.0, dtype=f32}
  %scale = full() {shape=[4,8], value=0.03125, dtype=f32}
  %active = gt(%h, %zero)
  %dh = select(%active, %scale, %zero)
  %xt = transpose(%x) {perm=[1,0]}
  %dw = matmul(%xt, %dh)
  %mu = full() {shape=[], value=0.9, dtype=f32}
  %m_old = mul(%optimizer.w.momentum, %mu)
  %m_new = add(%m_old, %dw)
  assign(%optimizer.w.momentum, %m_new)
  %step = mul(%m_new, %lr)
  %w_new = sub(%w, %step)
  assign(%w, %w_new)
  return %loss
}
)";

Graph typed(const char* text) {
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(InferTypesPass().run(*g).ok());
  return std::move(*g);
}

BufferKind kind_of(const Graph& g, const std::vector<BufferKind>& kinds, const char* name) {
  return kinds[*g.find_value(name)];
}

TEST(ClassifyValues, FollowsTheDocumentedRule) {
  Graph g = typed(kTinyStep);
  std::vector<BufferKind> k = classify_values(g);
  // Inputs by kind and name.
  EXPECT_EQ(kind_of(g, k, "w"), BufferKind::parameter);
  EXPECT_EQ(kind_of(g, k, "stat"), BufferKind::parameter);
  EXPECT_EQ(kind_of(g, k, "optimizer.w.momentum"), BufferKind::optimizer_state);
  EXPECT_EQ(kind_of(g, k, "x"), BufferKind::activation);
  // 1. Assigned values take their target's kind.
  EXPECT_EQ(kind_of(g, k, "w_new"), BufferKind::parameter);
  EXPECT_EQ(kind_of(g, k, "stat_new"), BufferKind::parameter);
  EXPECT_EQ(kind_of(g, k, "m_new"), BufferKind::optimizer_state);
  // 2. What the output needs.
  for (const char* name : {"h", "a", "loss"}) EXPECT_EQ(kind_of(g, k, name), BufferKind::activation) << name;
  // 3. Computed from an optimizer slot.
  EXPECT_EQ(kind_of(g, k, "m_old"), BufferKind::optimizer_state);
  EXPECT_EQ(kind_of(g, k, "step"), BufferKind::optimizer_state);
  // 4. Reaches a param's update: the backward pass.
  for (const char* name : {"zero", "scale", "active", "dh", "xt", "dw", "mu"}) {
    EXPECT_EQ(kind_of(g, k, name), BufferKind::gradient) << name;
  }
  // 5. Reaches only a state update.
  EXPECT_EQ(kind_of(g, k, "col_mean"), BufferKind::parameter);
}

TEST(ClassifyValues, AnInferenceGraphIsAllActivations) {
  Graph g = typed(R"(
graph @f(%x: f32[4], %w: f32[4] {param}) -> (f32[4]) {
  %y = mul(%x, %w)
  %z = exp(%y)
  return %z
})");
  std::vector<BufferKind> k = classify_values(g);
  EXPECT_EQ(kind_of(g, k, "y"), BufferKind::activation);
  EXPECT_EQ(kind_of(g, k, "z"), BufferKind::activation);
}

TEST(BufferSpans, LiveRangesEndAtTheLastReaderOrAtAnInPlaceSuccessor) {
  Graph g = typed(R"(
graph @f(%x: f32[16]) -> (f32[], f32[16]) {
  %a = neg(%x)
  %b = exp(%a)
  %c = sum(%b)
  %d = mul(%b, %b)
  return %c, %d
})");
  StatusOr<MemoryPlan> plan = plan_memory(g);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  std::vector<BufferSpan> spans = buffer_spans(g, *plan);
  ASSERT_EQ(spans.size(), 4u);
  // %b = exp(%a) takes over %a's buffer in place: %a's rectangle ends before step 1.
  EXPECT_EQ(spans[0].value, *g.find_value("a"));
  EXPECT_EQ(spans[0].first_step, 0);
  EXPECT_EQ(spans[0].last_step, 0);
  EXPECT_EQ(spans[1].offset, spans[0].offset);
  EXPECT_EQ(spans[1].first_step, 1);
  // %b's last reader %d = mul(%b, %b) takes it over too; %c = sum(%b) does not.
  EXPECT_EQ(spans[1].last_step, 2);
  EXPECT_EQ(spans[3].offset, spans[1].offset);
  EXPECT_NE(spans[2].offset, spans[1].offset);
  // Outputs live to the end of the step.
  EXPECT_EQ(spans[2].first_step, 2);
  EXPECT_EQ(spans[2].last_step, 3);
  EXPECT_EQ(spans[3].first_step, 3);
  EXPECT_EQ(spans[3].last_step, 3);
  for (const BufferSpan& s : spans) EXPECT_EQ(s.bytes % 64, 0);
}

TEST(MemoryPlanSvg, HasOneRectanglePerBufferALegendAndThePeak) {
  Graph g = typed(kTinyStep);
  StatusOr<MemoryPlan> plan = plan_memory(g);
  ASSERT_TRUE(plan.ok());
  std::string svg = memory_plan_svg(g, *plan);
  size_t rects = 0;
  for (size_t at = svg.find("class=\"buffer\""); at != std::string::npos;
       at = svg.find("class=\"buffer\"", at + 1)) {
    ++rects;
  }
  EXPECT_EQ(rects, buffer_spans(g, *plan).size());
  EXPECT_EQ(rects, static_cast<size_t>(plan->num_intermediates));
  for (const char* text : {"activation", "gradient", "parameter", "optimizer state", "peak ",
                           "arena top", "schedule step", "arena offset"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(svg.find("data-producer"), std::string::npos);  // only with node_links
  MemoryPictureOptions linked;
  linked.node_links = true;
  EXPECT_NE(memory_plan_svg(g, *plan, linked).find("data-producer=\"0\""), std::string::npos);
}

TEST(MemoryPlanSvg, DrawsAGraphWithoutNodes) {
  Graph g = typed(R"(
graph @id(%x: f32[4]) -> (f32[4]) {
  return %x
})");
  StatusOr<MemoryPlan> plan = plan_memory(g);
  ASSERT_TRUE(plan.ok());
  std::string svg = memory_plan_svg(g, *plan);
  EXPECT_NE(svg.find("0 buffers over 1 steps"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("class=\"buffer\""), std::string::npos);
}

TEST(MemoryPlanSvg, MatchesTheGoldenFile) {
  Graph g = typed(kTinyStep);
  StatusOr<MemoryPlan> plan = plan_memory(g);
  ASSERT_TRUE(plan.ok());
  const std::string svg = memory_plan_svg(g, *plan);
  const std::string golden = "tools/viz/testdata/tiny_step_memory.svg";
  const char* update = std::getenv("WEFT_UPDATE_GOLDEN");
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (update && std::string(update) == "1" && workspace) {
    std::ofstream(std::string(workspace) + "/" + golden) << svg;
    GTEST_SKIP() << "rewrote " << golden;
  }
  std::ifstream in(golden);
  ASSERT_TRUE(in) << "cannot read " << golden
                  << "; make it with WEFT_UPDATE_GOLDEN=1 bazel run //tools/viz:memory_picture_test";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(svg, expected.str())
      << "the memory picture changed; if that is intended, regenerate the golden file with "
         "WEFT_UPDATE_GOLDEN=1 bazel run //tools/viz:memory_picture_test and review it";
}

}  // namespace
}  // namespace weft::viz
