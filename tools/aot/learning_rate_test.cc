// An AOT CompiledModel given a learning rate that is not finite (set_lr(NaN), set_lr(inf))
// or negative (set_lr(-0.1), which made the optimizer ascend) refuses the next step with
// the JIT Trainer's message (training/learning_rate.h) and changes nothing: no value, no
// step count; a rate of 0 or more set afterwards trains again.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bench/aot/mlp.h"
#include "tools/aot/batches.h"
#include "training/aot/compiled_model.h"

namespace weft::aot {
namespace {

TEST(AotLearningRate, ARateThatIsNotFiniteOrNegativeIsRefusedByTheStepAndChangesNothing) {
  StatusOr<std::unique_ptr<CompiledModel>> made = CompiledModel::create(weft_aot::Mlp::table(), 3, {.num_threads = 1});
  ASSERT_TRUE(made.ok()) << made.error().to_string();
  CompiledModel& m = **made;
  const std::vector<Tensor> batch =
      random_batch(m.step_inputs(), 0, m.eval_outputs()[0].type.shape.dims.back(), /*seed=*/1);
  ASSERT_TRUE(m.step(batch).ok());
  const std::string not_finite = ": the learning rate must be finite (a step with it makes every weight NaN)";
  const std::pair<double, std::string> refused[] = {
      {std::nan(""), "set_lr(nan)" + not_finite},
      {std::numeric_limits<double>::infinity(), "set_lr(inf)" + not_finite},
      {-0.1, "set_lr(-0.1): the learning rate must be >= 0 (a negative one makes the optimizer climb the loss; "
             "0 leaves the weights as they are)"}};
  for (const auto& [bad, message] : refused) {
    const std::map<std::string, Tensor> before = m.values();
    m.set_lr(bad);
    StatusOr<double> loss = m.step(batch);
    ASSERT_FALSE(loss.ok()) << bad;
    EXPECT_EQ(loss.error().message, message);
    EXPECT_EQ(m.steps(), 1);
    for (const auto& [name, value] : before) EXPECT_EQ(m.values().at(name), value) << name;
  }
  m.set_lr(0);
  ASSERT_TRUE(m.step(batch).ok());
  m.set_lr(1e-3);
  ASSERT_TRUE(m.step(batch).ok());
  EXPECT_EQ(m.steps(), 3);
}

}  // namespace
}  // namespace weft::aot
