// FlowBuilder::loop_body (for_n, until_cond, while_cond) and map(body).each()
// (frontend/loop.h): one loop node in the graph, values equal to the body applied by
// hand, per-sample halting, gradients against finite differences (samples halting at
// different iterations included), training on the interpreter and the cpu backend
// alike (loops as loop invocations, or unrolled), and the errors naming the builder call.
#include "frontend/loop.h"

#include <gtest/gtest.h>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/gradcheck.h"
#include "frontend/testing/run_model.h"
#include "frontend/training.h"

namespace weft {
namespace {

// The stream plus the values of uses({...}), added.
class AddAll : public Module {
 public:
  std::string describe() const override { return "AddAll"; }
  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    ValueId sum = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i) sum = e.add(sum, inputs[i]);
    return sum;
  }
};

int loops(const Model& m) {
  int n = 0;
  for (const Node& node : m.graph().nodes()) n += node.op == Op::Scan;
  return n;
}

std::vector<std::string> names(const Model& m) {
  std::vector<std::string> out;
  for (const ParamInfo& p : m.parameters()) out.push_back(p.name);
  return out;
}

TEST(Loop, ForNIsOneLoopAndEqualsTheBodyAppliedNTimes) {
  auto body = *FlowBuilder::from(Linear(2, 2)).through(Tanh()).build();
  auto looped = FlowBuilder::from(Identity()).loop_body(body).for_n(3).build({{"x", f32({2, 2})}});
  ASSERT_TRUE(looped.ok()) << looped.error().to_string();
  auto by_hand = FlowBuilder::from(Identity()).through(body).through(body).through(body).build({{"x", f32({2, 2})}});
  ASSERT_TRUE(by_hand.ok()) << by_hand.error().to_string();
  EXPECT_EQ(loops(*looped), 1);
  EXPECT_EQ(loops(*by_hand), 0);
  EXPECT_EQ(names(*looped), (std::vector<std::string>{"1.0.weight", "1.0.bias"}));
  EXPECT_EQ(names(*looped), names(*by_hand));
  const std::map<std::string, Tensor> w = {
      {"1.0.weight", Tensor::from_vector<float>({2, 2}, {0.5f, -1, 0.25f, 0.75f})},
      {"1.0.bias", Tensor::from_vector<float>({2}, {0.1f, -0.2f})}};
  const Tensor x = Tensor::from_vector<float>({2, 2}, {1, -2, 0.5f, 3});
  auto a = testing::run_model(*looped, {x}, w);
  auto b = testing::run_model(*by_hand, {x}, w);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->outputs[0].to_doubles(), b->outputs[0].to_doubles());
}

// h ← h + 1 (Linear(1, 1) with weight 1, bias 1); halt when h - 3 > 0 (weight 1, bias -3).
std::map<std::string, Tensor> counter_weights() {
  return {{"1.weight", Tensor::from_vector<float>({1, 1}, {1})},
          {"1.bias", Tensor::from_vector<float>({1}, {1})},
          {"1.cond.weight", Tensor::from_vector<float>({1, 1}, {1})},
          {"1.cond.bias", Tensor::from_vector<float>({1}, {-3})}};
}

std::vector<double> count(bool until, int64_t max) {
  FlowBuilder b = FlowBuilder::from(Identity());
  if (until) {
    b.loop_body(Linear(1, 1)).until_cond(Linear(1, 1), max);
  } else {
    b.loop_body(Linear(1, 1)).while_cond(Linear(1, 1), max);
  }
  auto model = b.build({{"x", f32({3, 1})}});
  EXPECT_TRUE(model.ok()) << model.error().to_string();
  if (!model.ok()) return {};
  EXPECT_EQ(loops(*model), 1);
  // while_cond tests the condition before the first iteration: its parameters come first.
  const std::vector<std::string> body = {"1.weight", "1.bias"}, cond = {"1.cond.weight", "1.cond.bias"};
  std::vector<std::string> want = until ? body : cond;
  want.insert(want.end(), (until ? cond : body).begin(), (until ? cond : body).end());
  EXPECT_EQ(names(*model), want);
  auto run = testing::run_model(*model, {Tensor::from_vector<float>({3, 1}, {0, 2.5f, 10})}, counter_weights());
  EXPECT_TRUE(run.ok()) << run.error().to_string();
  return run.ok() ? run->outputs[0].to_doubles() : std::vector<double>{};
}

TEST(Loop, UntilCondHaltsEachSampleOnItsOwn) {
  // 0 → 1 → 2 → 3 → 4 (4 iterations); 2.5 → 3.5 and 10 → 11 (one each: until runs once).
  EXPECT_EQ(count(true, 6), (std::vector<double>{4, 3.5, 11}));
  // At most max iterations.
  EXPECT_EQ(count(true, 2), (std::vector<double>{2, 3.5, 11}));
}

TEST(Loop, WhileCondTestsFirstSoAHaltedSampleKeepsItsInput) {
  EXPECT_EQ(count(false, 6), (std::vector<double>{4, 3.5, 10}));
  EXPECT_EQ(count(false, 2), (std::vector<double>{2, 3.5, 10}));
}

TEST(Loop, GradientsMatchFiniteDifferences) {
  auto body = *FlowBuilder::from(Linear(3, 3)).through(Tanh()).build();
  std::vector<double> xv;
  for (int i = 0; i < 12; ++i) xv.push_back(0.3 * i - 1.7);
  const Tensor x = Tensor::from_doubles(DType::f64, {4, 3}, xv);
  auto for_n = FlowBuilder::from(Linear(3, 3)).loop_body(body).for_n(4).through(Linear(3, 2)).build({{"x", f64({4, 3})}});
  ASSERT_TRUE(for_n.ok()) << for_n.error().to_string();
  testing::expect_gradients_match_finite_differences(*for_n, x, 1e-6);
  auto recomputed =
      FlowBuilder::from(Linear(3, 3)).loop_body(body).recompute().for_n(4).build({{"x", f64({4, 3})}});
  ASSERT_TRUE(recomputed.ok()) << recomputed.error().to_string();
  testing::expect_gradients_match_finite_differences(*recomputed, x, 1e-6);
  // Halting per sample: the inputs spread the samples' sums, so they stop at different
  // iterations; the gradient reaches the iterations each one ran.
  auto until = FlowBuilder::from(Identity()).loop_body(body).until_cond(Linear(3, 1), 5).build({{"x", f64({4, 3})}});
  ASSERT_TRUE(until.ok()) << until.error().to_string();
  testing::expect_gradients_match_finite_differences(*until, x, 1e-6);
  auto while_ = FlowBuilder::from(Identity()).loop_body(body).while_cond(Linear(3, 1), 5).build({{"x", f64({4, 3})}});
  ASSERT_TRUE(while_.ok()) << while_.error().to_string();
  testing::expect_gradients_match_finite_differences(*while_, x, 1e-6);
}

TEST(Loop, UsesValuesReachEveryIteration) {
  // h ← h + skip, 3 times: x + 3·x.
  auto model = FlowBuilder::from(Identity()).tag("skip").loop_body(std::make_shared<AddAll>()).for_n(3);
  model.uses({"skip"});
  auto built = model.build({{"x", f32({1, 2})}});
  ASSERT_TRUE(built.ok()) << built.error().to_string();
  auto run = testing::run_model(*built, {Tensor::from_vector<float>({1, 2}, {1, -2})}, {});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_EQ(run->outputs[0].to_doubles(), (std::vector<double>{4, -8}));
}

TEST(Loop, TrainsAlikeOnTheInterpreterAndTheCpuBackend) {
  auto body = *FlowBuilder::from(Linear(4, 4)).through(Tanh()).build();
  auto net = FlowBuilder::from(Linear(3, 4))
                 .loop_body(body).until_cond(Linear(4, 1), 4)
                 .loop_body(body).for_n(2)
                 .through(Linear(4, 2))
                 .build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  const Tensor x = Tensor::from_vector<float>({3, 3}, {1, 2, 3, -1, 0.5f, 0, 0.2f, -0.4f, 2});
  const Tensor y = Tensor::from_vector<float>({3, 2}, {0.5f, -0.5f, 1, 0, -1, 0.25f});
  std::vector<std::vector<double>> losses;
  std::map<std::string, Tensor> first;
  // The interpreter; the cpu backend with each loop a loop invocation; unrolled; and
  // with every loop's gradient recomputing its intermediates.
  for (const std::string run : {"reference", "cpu", "cpu-unrolled", "cpu-recompute"}) {
    TrainOptions options{.seed = 3, .backend = run == "reference" ? "reference" : "cpu"};
    options.unroll_loops = run == "cpu-unrolled";
    options.recompute_loops = run == "cpu-recompute";
    auto t = Trainer::compile(*net, {{"x", f32({3, 3})}}, LossSpec::mse(), OptimizerSpec::adam(1e-2), options);
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    losses.emplace_back();
    for (int s = 0; s < 5; ++s) {
      auto loss = t->step({x, y});
      ASSERT_TRUE(loss.ok()) << loss.error().to_string();
      losses.back().push_back(*loss);
    }
    if (first.empty()) {
      first = t->values();
    } else {
      for (const auto& [name, v] : t->values()) {
        EXPECT_TRUE(all_close(v, first.at(name), 1e-5)) << name;
      }
    }
  }
  for (size_t s = 0; s < losses[0].size(); ++s) {
    EXPECT_NEAR(losses[0][s], losses[1][s], 1e-5);
    EXPECT_NEAR(losses[0][s], losses[2][s], 1e-5);
    EXPECT_NEAR(losses[0][s], losses[3][s], 1e-5);
  }
  EXPECT_LT(losses[0].back(), losses[0].front());
}

TEST(Loop, Errors) {
  auto error = [](FlowBuilder& b, Type x) {
    auto m = b.build({{"x", x}});
    return m.ok() ? std::string("ok") : m.error().to_string();
  };
  {
    FlowBuilder b = FlowBuilder::from(Identity());
    b.loop_body(Linear(2, 3)).for_n(2);
    const std::string e = error(b, f32({4, 2}));
    EXPECT_NE(e.find("loop_body(Linear(2->3)).for_n(2): the body maps the stream f32[4,2] to f32[4,3]; "
                     "every iteration feeds its output back, so it must keep the type"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("loop_test.cc:"), std::string::npos) << e;
  }
  {
    FlowBuilder b = FlowBuilder::from(Identity());
    b.loop_body(Linear(2, 2)).for_n(0);
    EXPECT_NE(error(b, f32({4, 2})).find("loop_body(Linear(2->2)).for_n(0): the count must be at least 1, got 0"),
              std::string::npos);
  }
  {
    FlowBuilder b = FlowBuilder::from(Identity());
    b.loop_body(Linear(2, 2)).until_cond(Linear(2, 2), 3);
    const std::string e = error(b, f32({4, 2}));
    EXPECT_NE(e.find("the condition must give one float per sample ([4] or [4, 1]); it gives f32[4,2]"),
              std::string::npos)
        << e;
  }
  {
    FlowBuilder b = FlowBuilder::from(Identity());
    b.loop_body(BatchNorm2d(2)).for_n(2);
    const std::string e = error(b, f32({4, 2, 3, 3}));
    EXPECT_NE(e.find("a loop body cannot assign state ("), std::string::npos) << e;
    EXPECT_NE(e.find("keep it outside the loop"), std::string::npos) << e;
  }
}

TEST(MapEach, TheBodySeesABatchOfOne) {
  // A body that mixes rows: softmax over the batch axis is 1 for a batch of one.
  auto each = FlowBuilder::from(Identity()).map(Softmax(0)).each().build({{"x", f32({3, 2})}});
  ASSERT_TRUE(each.ok()) << each.error().to_string();
  EXPECT_EQ(loops(*each), 1);
  auto run = testing::run_model(*each, {Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6})}, {});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_EQ(run->outputs[0].to_doubles(), (std::vector<double>(6, 1.0)));
  // A body that keeps rows apart gives what it gives on the whole batch.
  auto mapped = FlowBuilder::from(Identity()).map(Linear(2, 3)).each().build({{"x", f64({3, 2})}});
  auto whole = FlowBuilder::from(Identity()).through(Linear(2, 3)).build({{"x", f64({3, 2})}});
  ASSERT_TRUE(mapped.ok() && whole.ok());
  EXPECT_EQ(mapped->graph().type(mapped->graph().outputs()[0]), f64({3, 3}));
  const std::map<std::string, Tensor> w = {
      {"1.weight", Tensor::from_doubles(DType::f64, {3, 2}, {1, 2, 3, 4, 5, 6})},
      {"1.bias", Tensor::from_doubles(DType::f64, {3}, {0.5, 0, -0.5})}};
  const Tensor x = Tensor::from_doubles(DType::f64, {3, 2}, {1, -1, 0.5, 2, 0, 3});
  auto a = testing::run_model(*mapped, {x}, w), b = testing::run_model(*whole, {x}, w);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->outputs[0].to_doubles(), b->outputs[0].to_doubles());
  testing::expect_gradients_match_finite_differences(*mapped, x, 1e-6);
}

TEST(MapOver, TheBodyOnEachElementOfAnEarlierTagBecomesTheStream) {
  // The tag "x" is the input; the stream goes on through Linear(2, 5) (ignored by the map);
  // map(Softmax(0)).over("x") gives 1 for every element of x, as each() on x would.
  auto over = FlowBuilder::from(Identity()).tag("x").through(Linear(2, 5)).map(Softmax(0)).over("x").build(
      {{"x", f32({3, 2})}});
  ASSERT_TRUE(over.ok()) << over.error().to_string();
  EXPECT_EQ(over->graph().type(over->graph().outputs()[0]), f32({3, 2}));
  auto run = testing::run_model(*over, {Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6})},
                                {{"1.weight", Tensor(f32({5, 2}))}, {"1.bias", Tensor(f32({5}))}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_EQ(run->outputs[0].to_doubles(), (std::vector<double>(6, 1.0)));
  // A tag defined later is a forward reference, which a map cannot read.
  auto later = FlowBuilder::from(Identity()).map(Softmax(0)).over("y").tag("y").build({{"x", f32({3, 2})}});
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.error().to_string().find(
                "map(...).over(\"y\") maps over a tag defined before it, but \"y\" is defined later (a "
                "forward reference)"),
            std::string::npos)
      << later.error().to_string();
  EXPECT_NE(later.error().to_string().find("loop_test.cc:"), std::string::npos) << later.error().to_string();
}

}  // namespace
}  // namespace weft
