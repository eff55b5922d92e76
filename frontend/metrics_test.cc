// Metrics through the Trainer: every step's loss, statistics of tagged activations
// computed inside the compiled step (collect), metrics at graph-tree paths (record_at),
// and a trend driving a decision — the lr cut when the loss stalls, as the README shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "frontend/modules.h"
#include "frontend/training.h"

namespace weft {
namespace {

/// x f32[6, 4] (fixed values) and a regression target f32[6, 2].
std::vector<Tensor> batch() {
  std::vector<float> x, y;
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 4; ++c) x.push_back(static_cast<float>(std::sin(1.3 * r + 0.7 * c)));
    for (int c = 0; c < 2; ++c) y.push_back(static_cast<float>(0.5 * std::cos(0.9 * r - c)));
  }
  return {Tensor::from_vector<float>({6, 4}, x), Tensor::from_vector<float>({6, 2}, y)};
}

/// The input tagged "in", an encoder (labelled) whose output is tagged "hidden", a head.
FlowPtr net() {
  auto encoder = FlowBuilder::from(Linear(4, 8)).through(Tanh()).label("encoder").build();
  EXPECT_TRUE(encoder.ok());
  auto n = FlowBuilder::from(Identity()).tag("in").through(*encoder).tag("hidden").through(Linear(8, 2)).build();
  EXPECT_TRUE(n.ok()) << n.error().to_string();
  return *n;
}

StatusOr<Trainer> compile(const std::string& backend, double lr = 0.1) {
  return Trainer::compile(net(), {{"x", f32({6, 4})}}, LossSpec::mse(), OptimizerSpec::sgd(lr),
                          {.seed = 5, .backend = backend});
}

class TrainerMetrics : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainerMetrics, LossAndCollectedStatisticsPerStep) {
  auto t = compile(GetParam());
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  ASSERT_TRUE(t->collect({"in"}, Statistic::mean).ok());
  ASSERT_TRUE(t->collect({"in"}, Statistic::std).ok());
  ASSERT_TRUE(t->collect({"in"}, Statistic::abs_mean).ok());
  ASSERT_TRUE(t->collect({"in"}, Statistic::norm).ok());
  ASSERT_TRUE(t->collect({"in"}, Statistic::min).ok());
  ASSERT_TRUE(t->collect({"in", "hidden"}, Statistic::max).ok());
  const std::vector<Tensor> b = batch();
  std::vector<double> x = b[0].to_doubles();
  double sum = 0, abs_sum = 0, sq = 0;
  for (double v : x) sum += v, abs_sum += std::abs(v), sq += v * v;
  const double n = static_cast<double>(x.size()), mean = sum / n;
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);

  StatusOr<double> l1 = t->step(b), l2 = t->step(b);
  ASSERT_TRUE(l1.ok() && l2.ok());
  EXPECT_DOUBLE_EQ(*t->metrics().current("loss"), (*l1 + *l2) / 2);
  EXPECT_NEAR(*t->metrics().current("in.mean"), mean, 1e-6);
  EXPECT_NEAR(*t->metrics().current("in.std"), std::sqrt(var / n), 1e-6);
  EXPECT_NEAR(*t->metrics().current("in.abs_mean"), abs_sum / n, 1e-6);
  EXPECT_NEAR(*t->metrics().current("in.norm"), std::sqrt(sq), 1e-5);
  EXPECT_NEAR(*t->metrics().current("in.min"), *std::min_element(x.begin(), x.end()), 1e-7);
  EXPECT_NEAR(*t->metrics().current("in.max"), *std::max_element(x.begin(), x.end()), 1e-7);
  const double hidden_max = *t->metrics().current("hidden.max");
  EXPECT_GT(hidden_max, -1);  // tanh's range
  EXPECT_LT(hidden_max, 1);
  ASSERT_TRUE(t->flush().ok());
  EXPECT_EQ(t->metrics().history("loss")->size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, TrainerMetrics, ::testing::Values("cpu", "reference"));

TEST(TrainerMetricsApi, RecordAtAGraphTreePathAndErrors) {
  auto t = compile("reference");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  ASSERT_TRUE(t->record_at("encoder.grad_norm", 0.5).ok());
  t->record_scalar("test_accuracy", 0.9);
  EXPECT_EQ(*t->metrics().current("encoder.grad_norm"), 0.5);
  EXPECT_EQ(t->record_at("decoder.loss", 1).to_string(),
            "error: record_at: 'decoder.loss': no subgraph labelled 'decoder'; label paths in "
            "this model: encoder");
  EXPECT_EQ(t->record_at("loss", 1).to_string(),
            "error: record_at: 'loss' is not a label path then a metric name "
            "(`encoder.scan.loss`); record_scalar records a name outside the graph tree");
  EXPECT_EQ(t->collect({"hiden"}).to_string(),
            "error: collect: the model has no tag 'hiden' (tags: in, hidden)");
  auto untagged = Trainer::compile(FlowBuilder::from(Linear(4, 2)).build().value(), {{"x", f32({6, 4})}},
                                   LossSpec::mse(), OptimizerSpec::sgd(0.1), {.backend = "reference"});
  ASSERT_TRUE(untagged.ok());
  EXPECT_EQ(untagged->collect({"hidden"}).to_string(),
            "error: collect: the model has no tag 'hidden' (it has no tags: name an activation "
            "with tag(...))");
}

// The README's loop: cut the lr by 10 when the epoch loss has stalled for 2 epochs.
TEST(TrainerMetricsApi, AStalledLossCutsTheLr) {
  auto t = compile("cpu", /*lr=*/0.2);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  const std::vector<Tensor> b = batch();
  int cut_at = -1;
  for (int epoch = 1; epoch <= 200 && cut_at < 0; ++epoch) {
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(t->step(b).ok());
    ASSERT_TRUE(t->flush().ok());
    if (*t->metrics().stalled("loss", /*n=*/2, /*tol=*/1e-3)) {
      t->set_lr(t->lr() / 10);
      cut_at = epoch;
    }
  }
  ASSERT_GT(cut_at, 2) << "the loss never stalled: " << t->metrics().csv();
  EXPECT_DOUBLE_EQ(t->lr(), 0.02);
  // Stalled means what it says: the best of the last 2 epochs is within 1e-3 of the best
  // before them, and the loss was falling before that.
  const auto h = *t->metrics().history("loss");
  EXPECT_LT(h.back().second, h.front().second);
  EXPECT_TRUE(*t->metrics().converged("loss", 2, 1e-3));
}

}  // namespace
}  // namespace weft
