// #28: a loop's gradient where the slots an early exit skipped hold NaN or inf in their
// xs (a padded batch past a sequence's end, inputs past the iteration where `stop` ended
// the loop). The terms of a weight's gradient formed after the loop over every slot must
// read zeros there, not NaN·0: the gradients are finite and the same whatever the
// skipped slots hold, for `active`, `stop`, reversed and nested loops, and match finite
// differences.
#include <gtest/gtest.h>

#include <cmath>

#include "autodiff/grad.h"
#include "autodiff/testing/skipped_slots.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

using testing::read_skipped_slot_graph;
using testing::skipped_slot_fills;
using testing::skipped_slot_inputs;
using testing::skipped_slot_params;

std::vector<std::vector<double>> gradients(const Graph& grad, double fill) {
  auto r = reference::run(grad, skipped_slot_inputs(grad, fill));
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  std::vector<std::vector<double>> out;
  if (r.ok()) {
    for (const Tensor& t : r->outputs) out.push_back(t.to_doubles());
  }
  return out;
}

class SkippedSlots : public ::testing::TestWithParam<std::string> {};

TEST_P(SkippedSlots, GradientsIgnoreWhatTheSkippedSlotsHold) {
  StatusOr<Graph> g = read_skipped_slot_graph(GetParam());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  const std::vector<std::string> wrt = skipped_slot_params(*g);
  auto grad = gradient_graph(*g, 0, wrt);
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  const auto finite = gradients(*grad, skipped_slot_fills()[0]);
  ASSERT_EQ(finite.size(), wrt.size());
  for (double fill : skipped_slot_fills()) {
    // The loss reads only the slots that ran.
    auto loss = reference::run(*g, skipped_slot_inputs(*g, fill));
    ASSERT_TRUE(loss.ok()) << loss.error().to_string();
    EXPECT_TRUE(std::isfinite(loss->outputs[0].get_double(0))) << "fill " << fill;
    const auto got = gradients(*grad, fill);
    ASSERT_EQ(got.size(), finite.size());
    for (size_t k = 0; k < got.size(); ++k) {
      for (size_t i = 0; i < got[k].size(); ++i) {
        EXPECT_EQ(got[k][i], finite[k][i]) << "d/d" << wrt[k] << "[" << i << "] with fill " << fill;
      }
    }
  }
}

TEST_P(SkippedSlots, GradientsMatchFiniteDifferences) {
  StatusOr<Graph> g = read_skipped_slot_graph(GetParam());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  const std::vector<std::string> wrt = skipped_slot_params(*g);
  auto grad = gradient_graph(*g, 0, wrt);
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  const double nan = skipped_slot_fills()[1];
  const auto analytic = gradients(*grad, nan);
  const std::vector<Tensor> inputs = skipped_slot_inputs(*g, nan);
  const double h = 1e-2;  // f32 graphs: a wide step, a loose tolerance
  for (size_t k = 0; k < wrt.size(); ++k) {
    size_t at = 0;
    while (g->value(g->inputs()[at].value).name != wrt[k]) ++at;
    for (int64_t i = 0; i < inputs[at].numel(); ++i) {
      std::vector<Tensor> plus = inputs, minus = inputs;
      plus[at].set_double(i, inputs[at].get_double(i) + h);
      minus[at].set_double(i, inputs[at].get_double(i) - h);
      auto p = reference::run(*g, plus), m = reference::run(*g, minus);
      ASSERT_TRUE(p.ok() && m.ok());
      const double numeric = (p->outputs[0].get_double(0) - m->outputs[0].get_double(0)) / (2 * h);
      EXPECT_NEAR(analytic[k][static_cast<size_t>(i)], numeric, 2e-3 * (1 + std::abs(numeric)))
          << "d/d" << wrt[k] << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Loops, SkippedSlots, ::testing::ValuesIn(testing::skipped_slot_graphs()),
                         [](const auto& info) { return info.param; });

// The numbers: u = 1, xs = [0.5, NaN], on = [true, false]: loss tanh(0.5) and
// d loss / d u = 0.5·(1 - tanh²(0.5)) = 0.3932.
TEST(SkippedSlots, TheReportedCase) {
  StatusOr<Graph> g = read_skipped_slot_graph("active");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  auto grad = gradient_graph(*g, 0, {"u"});
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  const double nan = skipped_slot_fills()[1];
  std::vector<Tensor> inputs = {Tensor::from_vector<float>({1, 1}, {1}), Tensor::from_vector<float>({2, 1, 1}, {0.5f, static_cast<float>(nan)}),
                                Tensor::from_vector<bool>({2}, {true, false}), Tensor::scalar(DType::f32, nan)};
  auto loss = reference::run(*g, inputs);
  ASSERT_TRUE(loss.ok()) << loss.error().to_string();
  EXPECT_NEAR(loss->outputs[0].get_double(0), std::tanh(0.5), 1e-6);
  auto du = reference::run(*grad, inputs);
  ASSERT_TRUE(du.ok()) << du.error().to_string();
  EXPECT_NEAR(du->outputs[0].get_double(0), 0.5 * (1 - std::tanh(0.5) * std::tanh(0.5)), 1e-6);
}

}  // namespace
}  // namespace weft
