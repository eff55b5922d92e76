#include "frontend/jit_trainable.h"

namespace weft {

StatusOr<std::unique_ptr<JitTrainable>> JitTrainable::compile(const FlowPtr& net,
                                                              const std::vector<InputSpec>& inputs,
                                                              LossSpec loss, OptimizerSpec optimizer,
                                                              TrainOptions options, int64_t eval_batch,
                                                              std::source_location where) {
  if (inputs.empty() || inputs[0].type.shape.rank() < 1) {
    return Error{"JitTrainable: the network's first input needs a batch dimension"};
  }
  WEFT_ASSIGN_OR_RETURN(Trainer trainer, Trainer::compile(net, inputs, loss, std::move(optimizer), options, where));
  std::unique_ptr<JitTrainable> t(new JitTrainable(std::move(trainer)));
  const Graph& forward = t->trainer_.model().graph();
  const Type out = forward.type(forward.outputs()[0]);
  for (const InputSpec& in : inputs) t->step_inputs_.push_back({in.name, in.type});
  t->step_inputs_.push_back(
      {"target", loss.integer_targets() ? Type{DType::i64, {out.shape[0]}} : out});

  if (eval_batch <= 0) eval_batch = inputs[0].type.shape[0];
  std::vector<Tensor> zeros;
  for (const InputSpec& in : inputs) {
    Type type = in.type;
    if (type.shape.rank() < 1) return Error{"JitTrainable: input '" + in.name + "' has no batch dimension"};
    type.shape.dims[0] = eval_batch;
    t->eval_inputs_.push_back({in.name, type});
    zeros.emplace_back(type);
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, t->trainer_.evaluate(zeros));
  for (size_t i = 0; i < outputs.size(); ++i) {
    t->eval_outputs_.push_back({i == 0 ? "output" : "output" + std::to_string(i), outputs[i].type()});
  }
  return t;
}

Status JitTrainable::check_types(const char* what, const std::vector<Tensor>& tensors,
                                 const std::vector<driver::TensorSpec>& specs) {
  if (tensors.size() != specs.size()) {
    return Error{std::string(what) + " takes " + std::to_string(specs.size()) + " tensors, got " +
                 std::to_string(tensors.size())};
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!(tensors[i].type() == specs[i].type)) {
      return Error{std::string(what) + ": '" + specs[i].name + "' is " + specs[i].type.to_string() +
                   ", got " + tensors[i].type().to_string()};
    }
  }
  return Status();
}

StatusOr<double> JitTrainable::step(const std::vector<Tensor>& batch) {
  WEFT_RETURN_IF_ERROR(check_types("step", batch, step_inputs_));
  return trainer_.step(batch);
}

Status JitTrainable::prefetch(const std::vector<Tensor>& batch) {
  WEFT_RETURN_IF_ERROR(check_types("prefetch", batch, step_inputs_));
  return trainer_.prefetch(batch);
}

StatusOr<std::vector<Tensor>> JitTrainable::evaluate(const std::vector<Tensor>& inputs) {
  WEFT_RETURN_IF_ERROR(check_types("evaluate", inputs, eval_inputs_));
  return trainer_.evaluate(inputs);
}

StatusOr<LoadReport> JitTrainable::load(const std::string& path, bool partial) {
  return trainer_.load(path, {.subgraph = "", .strict = !partial});
}

Status JitTrainable::set_check_numerics(bool on) {
  trainer_.set_check_numerics(on);
  return Status();
}

StatusOr<std::optional<driver::LossScaleReading>> JitTrainable::loss_scale() const {
  if (!*trainer_.options().loss_scale.enabled) return std::optional<driver::LossScaleReading>();
  WEFT_ASSIGN_OR_RETURN(double scale, trainer_.loss_scale());
  WEFT_ASSIGN_OR_RETURN(int64_t skipped, trainer_.skipped_steps());
  return std::optional<driver::LossScaleReading>(driver::LossScaleReading{scale, skipped});
}

Status JitTrainable::set_profiling(bool on) { return trainer_.set_profiling(on); }

std::string JitTrainable::profile_report() const {
  StatusOr<std::string> report = trainer_.profile_report();
  return report.ok() ? *report : "no profile: " + report.error().message + "\n";
}

}  // namespace weft
