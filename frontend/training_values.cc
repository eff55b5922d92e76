// The Trainer's values and checkpoints: the parameters, state and optimizer slots it
// keeps (values_) and the compiled step's copies of them — read back when newer
// (sync_values), pushed into an executor with their derived inputs (push_values) when
// they change outside the step (set_value, reset_state, load: masters_changed) — the loss
// scaler's state read alone, and save / load. Compiling and running the step are in
// training.cc; data parallelism in training_data_parallel.cc.
#include <map>
#include <string>

#include "autodiff/loss_scale.h"
#include "frontend/checkpoint.h"
#include "frontend/training.h"
#include "runtime/collective/parameters.h"  // writes_checkpoints, agree_after_failed_load
#include "training/derived_state.h"

namespace weft {

void Trainer::sync_values() const {
  if (!values_stale_ || !step_exec_) return;
  const Program& p = step_exec_->program();
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    if (p.inputs[i].kind == InputKind::data) continue;
    auto it = values_.find(p.inputs[i].name);
    if (it != values_.end()) it->second = step_exec_->input(static_cast<int>(i));
  }
  values_stale_ = false;
}

StatusOr<Tensor> Trainer::loss_scale_state(const std::string& name, const char* what) const {
  if (!*options_.loss_scale.enabled) {
    return Error{std::string(what) + ": loss scaling is off (TrainOptions::loss_scale.enabled)"};
  }
  if (values_stale_ && step_exec_) {
    const Program& p = step_exec_->program();
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      if (p.inputs[i].name == name) return step_exec_->input(static_cast<int>(i));
    }
  }
  auto it = values_.find(name);
  if (it == values_.end()) return Error{std::string(what) + ": the step has no value '" + name + "'"};
  return it->second;
}

StatusOr<double> Trainer::loss_scale() const {
  WEFT_ASSIGN_OR_RETURN(Tensor t, loss_scale_state(kLossScaleState, "loss_scale()"));
  return t.get_double(0);
}

StatusOr<int64_t> Trainer::skipped_steps() const {
  WEFT_ASSIGN_OR_RETURN(Tensor t, loss_scale_state(kSkippedStepsState, "skipped_steps()"));
  return static_cast<int64_t>(t.get_double(0));
}

Status Trainer::record_loss_scale() {
  WEFT_ASSIGN_OR_RETURN(double scale, loss_scale());
  WEFT_ASSIGN_OR_RETURN(int64_t skipped, skipped_steps());
  metrics_.record(kLossScaleState, scale);
  metrics_.record(kSkippedStepsState, static_cast<double>(skipped));
  return Status();
}

Status Trainer::push_values(ProgramExecutor& ex) const {
  const Program& p = ex.program();
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    if (p.inputs[i].kind == InputKind::data) continue;
    WEFT_ASSIGN_OR_RETURN(Tensor value, derived_.refresh(values_, p.inputs[i].name, p.inputs[i].type));
    WEFT_RETURN_IF_ERROR(ex.set_input(static_cast<int>(i), value));
  }
  return Status();
}

Status Trainer::masters_changed() {
  if (step_exec_) return push_values(*step_exec_);
  derived_.forget();
  return Status();
}

const std::map<std::string, Tensor>& Trainer::values() const {
  sync_values();
  return values_;
}

Status Trainer::set_value(const std::string& name, Tensor value) {
  sync_values();
  auto it = values_.find(name);
  if (it == values_.end()) return Error{"no parameter, state or optimizer slot named '" + name + "'"};
  if (!(it->second.type() == value.type())) {
    return Error{"'" + name + "' is " + it->second.type().to_string() + ", not " +
                 value.type().to_string()};
  }
  it->second = std::move(value);
  return masters_changed();
}

Status Trainer::reset_state() {
  sync_values();
  for (const ParamInfo& p : model_->parameters()) {
    if (p.carried) values_[p.name] = Tensor(values_.at(p.name).type());
  }
  return masters_changed();
}

Status Trainer::save(const std::string& path) const {
  if (!collective::writes_checkpoints(options_.bind.communicator.get())) return Status();
  sync_values();
  return save_checkpoint(path, *model_, values_, steps_);
}

StatusOr<LoadReport> Trainer::load(const std::string& path, const LoadOptions& options) {
  sync_values();
  StatusOr<LoadReport> loaded = load_checkpoint(path, *model_, values_, options);
  if (!loaded.ok() && options_.bind.communicator) {
    return collective::agree_after_failed_load(*options_.bind.communicator, path, loaded.error());
  }
  WEFT_ASSIGN_OR_RETURN(LoadReport report, std::move(loaded));
  if (options.subgraph.empty()) steps_ = report.step;
  loaded_from_ = path;
  WEFT_RETURN_IF_ERROR(agree_with_other_ranks());
  WEFT_RETURN_IF_ERROR(masters_changed());
  return report;
}

}  // namespace weft
