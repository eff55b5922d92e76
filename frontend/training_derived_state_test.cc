// The weight copies of a mixed-precision step (TrainOptions::weight_copies) are derived
// state that every backend keeps between steps: a copy is computed on the host from its
// f32 parameter when the step is compiled (cpu) or first run (reference) and whenever the
// parameters change outside the step, never per step (Trainer::derived_refreshes).
// training_precision_test's WeightCopiesChangeNoNumber checks that the losses stay bitwise
// those of a step that casts every weight.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "frontend/modules.h"
#include "frontend/training.h"

namespace weft {
namespace {
namespace training_derived_state_test {  // this file's names, apart in its package's unity test

std::vector<Tensor> batch(int i) {
  Tensor x(Type{DType::f32, {8, 6}});
  for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = std::sin(0.37f * k + i);
  std::vector<int64_t> labels;
  for (int64_t k = 0; k < 8; ++k) labels.push_back((k + i) % 3);
  return {x, Tensor::from_vector<int64_t>({8}, labels)};
}

TEST(TrainerDerivedState, CopiesAreRefreshedOnlyWhenTheParametersChangeOutsideTheStep) {
  for (const std::string backend : {"cpu", "reference"}) {
    StatusOr<FlowPtr> net = FlowBuilder::from(Linear(6, 16)).through(ReLU()).through(Linear(16, 3)).build();
    ASSERT_TRUE(net.ok()) << net.error().to_string();
    StatusOr<Trainer> t = Trainer::compile(*net, {{"x", f32({8, 6})}}, LossSpec::cross_entropy(),
                                           OptimizerSpec::adam(1e-2),
                                           {.seed = 5, .backend = backend, .precision = DType::bf16});
    ASSERT_TRUE(t.ok()) << backend << ": " << t.error().to_string();
    int64_t copies = 0;
    for (const Input& in : t->step_graph().inputs()) {
      copies += t->step_graph().value(in.value).name.rfind("weft.copy.", 0) == 0;
    }
    ASSERT_GT(copies, 0) << backend;  // at least the weights the matmuls read
    auto steps = [&](int n) {
      for (int i = 0; i < n; ++i) {
        StatusOr<double> loss = t->step(batch(i));
        ASSERT_TRUE(loss.ok()) << backend << ": " << loss.error().to_string();
      }
    };
    steps(1);
    EXPECT_EQ(t->derived_refreshes(), copies) << backend << ": the first step's copies";
    steps(4);
    EXPECT_EQ(t->derived_refreshes(), copies) << backend << ": no step re-casts a parameter";
    const std::string first = t->model().parameters()[0].name;
    Tensor w = t->values().at(first);
    for (int64_t k = 0; k < w.numel(); ++k) w.set_double(k, 0.5 * w.get_double(k));
    ASSERT_TRUE(t->set_value(first, w).ok());
    steps(3);
    EXPECT_EQ(t->derived_refreshes(), 2 * copies) << backend << ": once after set_value";
  }
}

}  // namespace training_derived_state_test
}  // namespace
}  // namespace weft
