// The Trainer's step: compile() builds the training graph (forward, loss, gradients,
// optimizer update) and compiles it for the backend; step() and evaluate() run it. Its
// values and checkpoints are in training_values.cc, data parallelism in
// training_data_parallel.cc, metrics in training_metrics.cc.
#include "frontend/training.h"

#include <functional>

#include "autodiff/grad.h"
#include "codegen/targets.h"
#include "frontend/init_params.h"
#include "ir/verifier.h"
#include "passes/fuse_attention.h"
#include "passes/mixed_precision.h"
#include "passes/pipeline.h"
#include "passes/weight_copies.h"
#include "training/derived_state.h"
#include "training/init.h"
#include "training/learning_rate.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/numerics.h"
#include "training/schedule.h"
#include "training/step_inputs.h"

namespace weft {
namespace {

// The step's own inputs (training/step_inputs.h).
constexpr const char* kTarget = kTargetInput;
constexpr const char* kStep = kStepInput;
constexpr const char* kMomentum = kMomentumInput;

/// The step input holding the lr of parameter group `group` (0: the default group).
std::string lr_input_name(const OptimizerSpec& spec, size_t group) {
  return weft::lr_input_name(group == 0 ? std::string() : spec.groups[group - 1].path);
}

/// Which group's lr the step input `name` holds (0: the default group), or -1.
int lr_group(const OptimizerSpec& spec, const std::string& name) {
  std::optional<std::string> path = lr_input_group(name);
  if (!path) return -1;
  if (path->empty()) return 0;
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    if (spec.groups[i].path == *path) return static_cast<int>(i + 1);
  }
  return -1;
}

std::string type_key(const std::vector<Tensor>& inputs) {
  std::string key;
  for (const Tensor& t : inputs) key += t.type().to_string() + ";";
  return key;
}

Status check_precision(DType precision) {
  if (precision == DType::f32 || is_half(precision)) return Status();
  return Error{"TrainOptions::precision is " + std::string(dtype_name(precision)) +
               "; a training step runs in f32, or mixed precision with bf16 or f16"};
}

// Mixed precision: the forward graph and its loss autocast to `low`, its outputs (the
// network's output, the collected statistics) and the loss kept f32, then the loops'
// casts of their carries rotated into low carries (no cast kernel per iteration).
// Returns the loss.
StatusOr<ValueId> autocast(Graph& g, DType low, ValueId loss) {
  g.add_output(loss);
  WEFT_RETURN_IF_ERROR(mixed_precision_pipeline(low).run(g).status());
  const ValueId f32_loss = g.outputs().back();
  g.mutable_outputs().pop_back();
  return f32_loss;
}

}  // namespace

StatusOr<Trainer> Trainer::compile(const FlowPtr& net, const std::vector<InputSpec>& inputs,
                                   LossSpec loss, OptimizerSpec optimizer, TrainOptions options,
                                   std::source_location where) {
  if (!net) {
    return Error{"Trainer::compile: the network is null; pass the flow that FlowBuilder's build() returned",
                 to_location(where)};
  }
  WEFT_ASSIGN_OR_RETURN(const codegen::Target* target, codegen::find_target(options.backend));
  WEFT_RETURN_IF_ERROR(connect_ranks(*target, options));
  if (options.check_numerics && !target->has_check_numerics()) {
    return target->check_numerics_unsupported("check_numerics");
  }
  WEFT_RETURN_IF_ERROR(check_precision(options.precision));
  Trainer t;
  t.target_ = target;
  t.net_ = net;
  t.inputs_ = inputs;
  t.loss_ = loss;
  t.optimizer_ = std::move(optimizer);
  t.options_ = options;
  t.options_.loss_scale.enabled = options.loss_scale.on(options.precision);  // decided once
  t.where_ = where;
  WEFT_RETURN_IF_ERROR(t.optimizer_.validate());
  if (*t.options_.loss_scale.enabled) WEFT_RETURN_IF_ERROR(options.loss_scale.validate());
  t.lrs_ = {t.optimizer_.lr};
  t.momentum_ = t.optimizer_.first_momentum();
  for (size_t i = 0; i < t.optimizer_.groups.size(); ++i) {
    t.lrs_.push_back(t.optimizer_.group_spec(i).lr);
  }
  // The spec's rates as every rate is checked: PyTorch's constructor check lets inf through.
  for (size_t i = 0; i < t.lrs_.size(); ++i) {
    const std::string group = i == 0 ? "" : "parameter group '" + t.optimizer_.groups[i - 1].path + "' of ";
    WEFT_RETURN_IF_ERROR(check_learning_rate(t.lrs_[i], group + t.optimizer_.describe()));
  }
  WEFT_RETURN_IF_ERROR(t.build_step());
  return t;
}

void Trainer::set_check_numerics(bool on) {
  options_.check_numerics = on;  // for the executors created from now on
  const Backend* runtime = target_->runtime();
  if (runtime == nullptr || runtime->set_check_numerics == nullptr) return;  // refused by step()
  if (step_exec_) runtime->set_check_numerics(*step_exec_, on);
  for (auto& [key, ex] : eval_execs_) runtime->set_check_numerics(*ex, on);
}

bool Trainer::compiled() const { return target_->compiled(); }

Status Trainer::check_numerics_available() const {
  if (options_.check_numerics && !target_->has_check_numerics()) {
    return target_->check_numerics_unsupported("check_numerics");
  }
  return Status();
}

StatusOr<std::unique_ptr<ProgramExecutor>> Trainer::compile_graph(const Graph& g, bool step) const {
  codegen::CompileOptions options{
      .bind = options_.bind,
      .check_numerics = options_.check_numerics,
      .capture_graph = options_.cuda_graph,
      .allow_host_fallback = options_.allow_host_fallback,
      .unroll_loops = options_.unroll_loops,
  };
  if (step) {
    options.overlap_all_reduce = options_.overlap_all_reduce;
    options.bind.accumulate_steps = optimizer_.accumulate_steps;
    options.bind.step_input = kStepInput;
  } else {
    // The eval forward reduces nothing and accumulates nothing.
    options.bind.communicator = nullptr;
    options.bind.accumulate_steps = 1;
    options.bind.step_input.clear();
  }
  return target_->compile(g, options);
}

// The training step as a sequence of named steps: the model, its loss, the forward's
// passes, the gradients and the update, the compiler's pipeline, first values, binding.
// Each step mutates `g` in the order the step's inputs and outputs are numbered by.
Status Trainer::build_step() {
  WEFT_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, build_model());
  Graph g = model->graph();
  WEFT_ASSIGN_OR_RETURN(StepLoss loss, add_loss(g, *model));
  ValueId step = g.add_input(kStep, Type{DType::i64, {}});
  std::vector<ValueId> wrt;
  for (const ParamInfo& p : model->parameters()) {
    if (p.kind == InputKind::param && !model->is_frozen(p.name)) wrt.push_back(p.value);
  }
  WEFT_RETURN_IF_ERROR(run_forward_passes(g, loss));
  WEFT_ASSIGN_OR_RETURN(StepUpdate update, add_update(g, *model, wrt, loss.value, step));
  WEFT_RETURN_IF_ERROR(split_gradients(g));
  std::vector<ValueId> outputs = {update.loss_out};
  outputs.insert(outputs.end(), loss.collected.begin(), loss.collected.end());
  g.set_outputs(outputs);
  g.set_declared_output_types({});
  WEFT_RETURN_IF_ERROR(default_pipeline().run(g));
  WEFT_RETURN_IF_ERROR(verify(g));
  WEFT_RETURN_IF_ERROR(check_same_step_on_every_rank(g));
  WEFT_RETURN_IF_ERROR(add_first_values(g, *model, update.slots));
  WEFT_RETURN_IF_ERROR(agree_with_other_ranks());
  if (compiled()) WEFT_RETURN_IF_ERROR(bind_step(g));
  derived_.forget();  // the reference backend refreshes the new step's copies
  step_ = std::move(g);
  slots_ = std::move(update.slots);
  model_ = std::move(model);
  eval_execs_.clear();
  return Status();
}

StatusOr<std::shared_ptr<Model>> Trainer::build_model() const {
  BuildOptions build;
  build.training = true;
  build.seed = options_.seed;
  WEFT_ASSIGN_OR_RETURN(Model built, net_->build(inputs_, build));
  // Replay freeze/thaw calls: they survive recompiles.
  for (const auto& [freeze, path] : freezes_) {
    WEFT_RETURN_IF_ERROR(freeze ? built.freeze(path) : built.thaw(path));
  }
  return std::make_shared<Model>(std::move(built));
}

StatusOr<Trainer::StepLoss> Trainer::add_loss(Graph& g, const Model& model) const {
  ValueId out = g.outputs()[0];
  Type out_type = g.type(out);
  if (loss_.integer_targets() && out_type.shape.rank() < 1) {
    return Error{"the network's output is " + out_type.to_string() +
                 "; a classification loss needs [batch, classes] logits"};
  }
  if (!loss_.takes_target() && (out_type.shape.rank() != 0 || !is_floating(out_type.dtype))) {
    return Error{"LossSpec::network_output(): the network's output is the loss and must be a "
                 "floating scalar, got " + out_type.to_string() +
                 "; end the flow in a loss module with a reduction (mean or sum)"};
  }
  Type target_type =
      loss_.integer_targets() ? Type{DType::i64, {out_type.shape[0]}} : out_type;
  ValueId target = loss_.takes_target() ? g.add_input(kTarget, target_type) : kNoValue;

  StepLoss loss;
  try {
    Emitter e(g, BuildOptions{});
    e.push_frame(nullptr, "loss", "", where_);
    loss.value = loss_.emit(e, out, target);
    e.pop_frame();
  } catch (const BuildFailure& failure) {
    return failure.error;
  }
  WEFT_ASSIGN_OR_RETURN(loss.collected, emit_collected(g, model));
  // Outputs while the forward identities are simplified, so that they stay computed.
  std::vector<ValueId> outputs = {out};
  outputs.insert(outputs.end(), loss.collected.begin(), loss.collected.end());
  g.set_outputs(outputs);
  return loss;
}

Status Trainer::run_forward_passes(Graph& g, StepLoss& loss) const {
  // The forward graph's identities first (passes/canonicalize.h: a slice that reads one
  // operand of a concat, ...), so that autodiff differentiates what is left: an unrolled
  // LSTM's state (h, c) is concatenated and sliced apart at every step, whose gradient
  // would otherwise be padded, summed and sliced apart again.
  WEFT_RETURN_IF_ERROR(default_pipeline().run_until(g, "canonicalize").status());
  if (options_.fuse_attention) WEFT_RETURN_IF_ERROR(FuseAttentionPass().run(g).status());
  if (options_.precision != DType::f32) {
    WEFT_ASSIGN_OR_RETURN(loss.value, autocast(g, options_.precision, loss.value));
  }
  loss.collected.assign(g.outputs().begin() + 1, g.outputs().end());  // as the passes left them
  if (options_.recompute_loops) {
    for (Node& n : g.mutable_nodes()) {
      if (n.op == Op::Scan) n.attrs["remat"] = true;  // a nested loop is differentiated inside its parent's
    }
  }
  return Status();
}

StatusOr<Trainer::StepUpdate> Trainer::add_update(Graph& g, const Model& model,
                                                  const std::vector<ValueId>& wrt,
                                                  ValueId loss_value, ValueId step) const {
  // Loss scaling: the gradients of loss · scale, unscaled and checked by the optimizer.
  std::optional<LossScaler> scaler;
  ValueId seed = kNoValue;
  if (*options_.loss_scale.enabled) {
    WEFT_ASSIGN_OR_RETURN(scaler, LossScaler::add_to(g, options_.loss_scale));
    WEFT_ASSIGN_OR_RETURN(seed, scaler->seed(g, loss_value));
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<ValueId> grads, append_gradients(g, loss_value, wrt, seed));
  std::vector<std::pair<ValueId, ValueId>> pairs;
  for (size_t i = 0; i < wrt.size(); ++i) pairs.emplace_back(wrt[i], grads[i]);
  StepUpdate update;
  update.loss_out = rank_mean_loss(g, loss_value);
  WEFT_ASSIGN_OR_RETURN(std::vector<OptimizerGroup> groups, optimizer_groups(g, model, pairs));
  ScaledUpdate scaled = scaler ? scaler->scaled_update(g) : ScaledUpdate{};
  WEFT_ASSIGN_OR_RETURN(update.slots,
                        append_optimizer(g, groups, step, scaler ? &scaled : nullptr,
                                         /*all_reduce_gradients=*/options_.bind.communicator != nullptr));
  if (scaler) {
    scaler->append_update(g, scaled);
    update.slots.insert(update.slots.end(), scaler->state().begin(), scaler->state().end());
  }
  if (options_.precision != DType::f32 && options_.weight_copies) {
    WEFT_RETURN_IF_ERROR(WeightCopiesPass().run(g).status());  // copies computed by push_values
  }
  return update;
}

Status Trainer::add_first_values(const Graph& g, const Model& model,
                                 const std::vector<OptimizerSlot>& slots) {
  // Parameters and state first, then optimizer slots; values already held are kept.
  WEFT_ASSIGN_OR_RETURN(auto initial, initialize_parameter_map(model, options_.seed));
  for (auto& [name, value] : initial) values_.try_emplace(name, std::move(value));
  for (const OptimizerSlot& slot : slots) {
    if (values_.count(slot.name)) continue;
    WEFT_ASSIGN_OR_RETURN(Tensor v, materialize(slot.init, g.type(slot.value), options_.seed,
                                                parameter_stream(slot.name)));
    values_.emplace(slot.name, std::move(v));
  }
  return Status();
}

Status Trainer::bind_step(const Graph& g) {
  WEFT_ASSIGN_OR_RETURN(step_exec_, compile_graph(g, /*step=*/true));
  WEFT_RETURN_IF_ERROR(push_values(*step_exec_));
  // Where each step's inputs go, found once: the batch (data inputs in order, the target
  // last), the learning rate and the step count.
  batch_inputs_.clear();
  lr_inputs_.assign(lrs_.size(), -1);
  momentum_input_ = -1;
  const Program& p = step_exec_->program();
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const int index = static_cast<int>(i);
    const std::string& name = p.inputs[i].name;
    if (name == kStep) step_input_ = index;
    else if (name == kMomentum) momentum_input_ = index;
    else if (int group = lr_group(optimizer_, name); group >= 0) lr_inputs_[group] = index;
    else if (p.inputs[i].kind == InputKind::data) batch_inputs_.push_back(index);
  }
  return Status();
}

StatusOr<std::vector<OptimizerGroup>> Trainer::optimizer_groups(
    Graph& g, const Model& model, const std::vector<std::pair<ValueId, ValueId>>& pairs) const {
  const std::vector<OptimizerSpec::Group>& specs = optimizer_.groups;
  // Which group each trainable parameter belongs to (0: the default group).
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < specs.size(); ++i) {
    StatusOr<std::vector<const ParamInfo*>> at = model.parameters_at(specs[i].path);
    if (!at.ok()) return Error{"parameter group '" + specs[i].path + "': " + at.error().message};
    for (const ParamInfo* p : *at) {
      auto [it, fresh] = group_of.emplace(p->name, i + 1);
      if (!fresh) {
        return Error{"parameter '" + p->name + "' is in two parameter groups, '" +
                     specs[it->second - 1].path + "' and '" + specs[i].path +
                     "' (PyTorch: some parameters appear in more than one parameter group)"};
      }
    }
  }
  std::vector<OptimizerGroup> groups(specs.size() + 1);
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].spec = i == 0 ? optimizer_ : optimizer_.group_spec(i - 1);
    groups[i].spec.groups.clear();
    groups[i].lr = g.add_input(lr_input_name(optimizer_, i), Type{DType::f32, {}});
  }
  if (optimizer_.scheduled_momentum) {  // one momentum for every group, as a schedule sets it
    const ValueId momentum = g.add_input(kMomentum, Type{DType::f32, {}});
    for (OptimizerGroup& group : groups) group.momentum = momentum;
  }
  for (const auto& pair : pairs) {
    auto it = group_of.find(g.value(pair.first).name);
    groups[it == group_of.end() ? 0 : it->second].params_and_grads.push_back(pair);
  }
  return groups;
}

void Trainer::set_lr(double lr) {
  const double base = optimizer_.lr;
  lrs_[0] = lr;
  for (size_t i = 0; i < optimizer_.groups.size(); ++i) {
    if (base != 0) lrs_[i + 1] = group_lr(optimizer_.group_spec(i).lr, lr, base);
  }
}

namespace {

/// The index in Trainer::lrs_ of the group at `path`, or an error listing the groups.
StatusOr<size_t> group_index(const OptimizerSpec& spec, const std::string& path) {
  std::string known;
  for (size_t i = 0; i < spec.groups.size(); ++i) {
    if (spec.groups[i].path == path) return i + 1;
    known += (i ? ", " : "") + spec.groups[i].path;
  }
  return Error{"no parameter group '" + path + "'" +
               (known.empty() ? std::string(" (the optimizer has no groups: add them with "
                                            "OptimizerSpec::with_group)")
                              : " (groups: " + known + ")")};
}

}  // namespace

Status Trainer::set_momentum(double momentum) {
  if (!optimizer_.scheduled_momentum) {
    return Error{"set_momentum: the optimizer " + optimizer_.describe() +
                 " compiles its momentum into the step; build it with "
                 "OptimizerSpec::with_scheduled_momentum() to schedule it"};
  }
  momentum_ = momentum;
  return Status();
}

Status Trainer::set_lr(const std::string& group, double lr) {
  WEFT_ASSIGN_OR_RETURN(size_t i, group_index(optimizer_, group));
  WEFT_RETURN_IF_ERROR(check_set_lr(lr, group));
  lrs_[i] = lr;
  return Status();
}

StatusOr<double> Trainer::lr(const std::string& group) const {
  WEFT_ASSIGN_OR_RETURN(size_t i, group_index(optimizer_, group));
  return lrs_[i];
}

Error Trainer::batch_size_error(size_t got) const {
  if (!loss_.takes_target()) {
    return Error{"step(...) takes " + std::to_string(inputs_.size()) +
                 " tensors (the inputs; LossSpec::network_output() takes no target), got " +
                 std::to_string(got)};
  }
  return Error{"step(...) takes " + std::to_string(inputs_.size() + 1) +
               " tensors (the inputs, then the target), got " + std::to_string(got)};
}

Status Trainer::prefetch(const std::vector<Tensor>& batch) {
  if (!compiled()) return Status();
  if (batch.size() != batch_inputs_.size()) return batch_size_error(batch.size());
  for (size_t k = 0; k < batch.size(); ++k) {
    WEFT_RETURN_IF_ERROR(step_exec_->prefetch_input(batch_inputs_[k], batch[k]));
  }
  return Status();
}

StatusOr<double> Trainer::step(const std::vector<Tensor>& batch) {
  WEFT_RETURN_IF_ERROR(check_next_step(steps_));
  // set_lr(double) returns nothing: a rate that is not finite, or negative, is refused by
  // the step it would have ruined (groups scaled from it are bad too: the first is named).
  WEFT_RETURN_IF_ERROR(check_set_lr(lrs_[0]));
  if (compiled()) {
    // The batch goes straight into the executor's input buffers (positions found once).
    if (batch.size() != batch_inputs_.size()) {
      return batch_size_error(batch.size());
    }
    for (size_t k = 0; k < batch.size(); ++k) {
      WEFT_RETURN_IF_ERROR(step_exec_->set_input(batch_inputs_[k], batch[k]));
    }
    WEFT_RETURN_IF_ERROR(check_numerics_available());
    for (size_t group = 0; group < lrs_.size(); ++group) {
      if (lr_inputs_[group] < 0) continue;
      WEFT_RETURN_IF_ERROR(
          step_exec_->set_input(lr_inputs_[group], Tensor::scalar(DType::f32, lrs_[group])));
    }
    WEFT_RETURN_IF_ERROR(step_exec_->set_input(
        step_input_, Tensor::scalar(DType::i64, static_cast<double>(steps_ + 1))));
    if (momentum_input_ >= 0) {
      WEFT_RETURN_IF_ERROR(step_exec_->set_input(momentum_input_, Tensor::scalar(DType::f32, momentum_)));
    }
    WEFT_RETURN_IF_ERROR(step_exec_->run());
    values_stale_ = true;
    ++steps_;
    const double loss = step_exec_->output(0).get_double(0);
    metrics_.record("loss", loss);
    record_collected([&](size_t k) { return step_exec_->output(static_cast<int>(k)).get_double(0); });
    return loss;
  }
  std::vector<Tensor> inputs;
  size_t next = 0;
  for (const Input& in : step_.inputs()) {
    const std::string& name = step_.value(in.value).name;
    if (int group = lr_group(optimizer_, name); group >= 0) {
      inputs.push_back(Tensor::scalar(DType::f32, lrs_[group]));
    } else if (name == kStep) {
      inputs.push_back(Tensor::scalar(DType::i64, static_cast<double>(steps_ + 1)));
    } else if (name == kMomentum) {
      inputs.push_back(Tensor::scalar(DType::f32, momentum_));
    } else if (in.kind == InputKind::data) {
      if (next >= batch.size()) break;
      inputs.push_back(batch[next++]);
    } else {
      WEFT_ASSIGN_OR_RETURN(Tensor value, derived_.take(values_, name, step_.type(in.value)));
      inputs.push_back(std::move(value));
    }
  }
  if (next != batch.size() || inputs.size() != step_.inputs().size()) {
    return batch_size_error(batch.size());
  }
  if (options_.check_numerics) WEFT_RETURN_IF_ERROR(reference::check_numerics(step_, inputs));
  WEFT_ASSIGN_OR_RETURN(reference::RunResult r, reference::run(step_, std::move(inputs)));
  for (auto& [name, value] : r.updated) {  // the weight copies: kept for the next step
    if (weight_copy_source(name)) derived_.keep(name, std::move(value));
    else values_[name] = std::move(value);
  }
  ++steps_;
  metrics_.record("loss", r.outputs[0].get_double(0));
  record_collected([&](size_t k) { return r.outputs[k].get_double(0); });
  return r.outputs[0].get_double(0);
}

StatusOr<std::vector<Tensor>> Trainer::evaluate(const std::vector<Tensor>& batch) {
  if (batch.size() != inputs_.size()) {
    return Error{"evaluate(...) takes " + std::to_string(inputs_.size()) + " tensors, got " +
                 std::to_string(batch.size())};
  }
  std::string key = type_key(batch);
  auto it = eval_graphs_.find(key);
  if (it == eval_graphs_.end()) {
    std::vector<InputSpec> specs;
    for (size_t i = 0; i < batch.size(); ++i) specs.push_back({inputs_[i].name, batch[i].type()});
    BuildOptions eval;
    eval.training = false;
    eval.seed = options_.seed;
    WEFT_ASSIGN_OR_RETURN(Model m, net_->build(specs, eval));
    it = eval_graphs_.emplace(key, m.graph()).first;
  }
  const Graph& g = it->second;
  sync_values();
  if (compiled()) {
    WEFT_RETURN_IF_ERROR(check_numerics_available());
    auto ex = eval_execs_.find(key);
    if (ex == eval_execs_.end()) {
      WEFT_ASSIGN_OR_RETURN(std::unique_ptr<ProgramExecutor> e, compile_graph(g, /*step=*/false));
      ex = eval_execs_.emplace(key, std::move(e)).first;
    }
    ProgramExecutor& e = *ex->second;
    WEFT_RETURN_IF_ERROR(push_values(e));
    size_t next = 0;
    for (size_t i = 0; i < e.program().inputs.size(); ++i) {
      if (e.program().inputs[i].kind != InputKind::data) continue;
      WEFT_RETURN_IF_ERROR(e.set_input(static_cast<int>(i), batch[next++]));
    }
    WEFT_RETURN_IF_ERROR(e.run());
    std::vector<Tensor> outputs;
    for (int i = 0; i < e.num_outputs(); ++i) outputs.push_back(e.output(i));
    return outputs;
  }
  std::vector<Tensor> inputs;
  size_t next = 0;
  for (const Input& in : g.inputs()) {
    if (in.kind == InputKind::data) {
      inputs.push_back(batch[next++]);
    } else {
      auto v = values_.find(g.value(in.value).name);
      if (v == values_.end()) {
        return Error{"the eval-mode graph needs '" + g.value(in.value).name +
                     "', which the training step does not have"};
      }
      inputs.push_back(v->second);
    }
  }
  if (options_.check_numerics) WEFT_RETURN_IF_ERROR(reference::check_numerics(g, inputs));
  WEFT_ASSIGN_OR_RETURN(reference::RunResult r, reference::run(g, std::move(inputs)));
  return std::move(r.outputs);
}

Status Trainer::freeze(const std::string& path) {
  WEFT_RETURN_IF_ERROR(model_->validate_path(path));
  freezes_.emplace_back(true, path);
  sync_values();
  Status s = build_step();
  if (!s.ok()) freezes_.pop_back();  // on error nothing changes
  return s;
}

Status Trainer::thaw(const std::string& path) {
  WEFT_RETURN_IF_ERROR(model_->validate_path(path));
  freezes_.emplace_back(false, path);
  sync_values();
  Status s = build_step();
  if (!s.ok()) freezes_.pop_back();
  return s;
}

Status Trainer::set_profiling(bool on) {
  if (!target_->has_profiler() || !step_exec_) return target_->profiler_unsupported("profiling");
  target_->runtime()->set_profiling(*step_exec_, on);
  return Status();
}

StatusOr<std::string> Trainer::profile_report(int top) const {
  if (!target_->has_profiler() || !step_exec_) return target_->profiler_unsupported("profiling");
  return target_->runtime()->profile_report(*step_exec_, top);
}


}  // namespace weft
