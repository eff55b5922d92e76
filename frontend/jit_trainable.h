#pragma once
// The JIT Trainer as a driver::Trainable (training/driver/trainable.h): the training driver
// can train a network compiled at run time exactly as it trains an AOT-compiled one, which
// is what the driver's tests and the JIT side of AOT comparisons do.
//
//   auto net = FlowBuilder::from(Linear(784, 64)).through(ReLU()).through(Linear(64, 10)).build();
//   StatusOr<std::unique_ptr<JitTrainable>> model = JitTrainable::compile(
//       *net, {{"x", Type{DType::f32, {32, 784}}}}, LossSpec::cross_entropy(),
//       OptimizerSpec::adam(1e-3), {.seed = seed}, /*eval_batch=*/100);
//
// step_inputs() are the network's inputs then the target (i64[B] for cross_entropy and
// nll, the output's type otherwise), named "target"; eval_inputs() the network's inputs
// at `eval_batch`; eval_outputs() the eval-mode network's outputs (found by evaluating
// zeros once at compile time).

#include <memory>
#include <source_location>
#include <vector>

#include "frontend/training.h"
#include "training/driver/trainable.h"

namespace weft {

class JitTrainable final : public driver::Trainable {
 public:
  /// Compiles the training step (Trainer::compile) and the evaluation at `eval_batch`
  /// (0: the training batch). `where`, the caller's line, is the loss's location in errors
  /// and --check-numerics (Trainer::compile's).
  static StatusOr<std::unique_ptr<JitTrainable>> compile(
      const FlowPtr& net, const std::vector<InputSpec>& inputs, LossSpec loss, OptimizerSpec optimizer,
      TrainOptions options = {}, int64_t eval_batch = 0,
      std::source_location where = std::source_location::current());

  const std::vector<driver::TensorSpec>& step_inputs() const override { return step_inputs_; }
  const std::vector<driver::TensorSpec>& eval_inputs() const override { return eval_inputs_; }
  const std::vector<driver::TensorSpec>& eval_outputs() const override { return eval_outputs_; }
  StatusOr<double> step(const std::vector<Tensor>& batch) override;
  Status prefetch(const std::vector<Tensor>& batch) override;
  StatusOr<std::vector<Tensor>> evaluate(const std::vector<Tensor>& inputs) override;
  void set_lr(double lr) override { trainer_.set_lr(lr); }
  double lr() const override { return trainer_.lr(); }
  bool takes_momentum() const override { return trainer_.optimizer().scheduled_momentum; }
  Status set_momentum(double momentum) override { return trainer_.set_momentum(momentum); }
  int64_t steps() const override { return trainer_.steps(); }
  StatusOr<std::optional<driver::LossScaleReading>> loss_scale() const override;
  Status set_check_numerics(bool on) override;
  Status set_profiling(bool on) override;
  std::string profile_report() const override;
  Status save(const std::string& path) const override { return trainer_.save(path); }
  StatusOr<LoadReport> load(const std::string& path, bool partial) override;

  Trainer& trainer() { return trainer_; }

 private:
  explicit JitTrainable(Trainer trainer) : trainer_(std::move(trainer)) {}
  /// Errors when `tensors` are not of `specs`' types (Trainer::evaluate would accept other
  /// batch sizes; a Trainable's shapes are static).
  static Status check_types(const char* what, const std::vector<Tensor>& tensors,
                            const std::vector<driver::TensorSpec>& specs);

  Trainer trainer_;
  std::vector<driver::TensorSpec> step_inputs_, eval_inputs_, eval_outputs_;
};

}  // namespace weft
