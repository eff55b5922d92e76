#include "training/aot/compiled_model.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "runtime/collective/parameters.h"
#include "training/derived_state.h"
#include "training/init.h"  // materialize
#include "training/learning_rate.h"
#include "training/schedule.h"
#include "training/step_inputs.h"

namespace weft::aot {
namespace {

// The step's own inputs (training/step_inputs.h).
constexpr const char* kLr = kLrInput;
constexpr const char* kStep = kStepInput;
constexpr const char* kMomentum = kMomentumInput;

// The data inputs of `p` that are the batch, in order, checked against `specs`.
StatusOr<std::vector<int>> batch_inputs(const Program& p, const std::vector<driver::TensorSpec>& specs) {
  std::vector<int> out;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const ProgramInput& in = p.inputs[i];
    if (in.kind != InputKind::data || lr_input_group(in.name) || in.name == kStep || in.name == kMomentum) {
      continue;
    }
    out.push_back(static_cast<int>(i));
  }
  if (out.size() != specs.size()) {
    return Error{"internal: program @" + p.name + " has " + std::to_string(out.size()) +
                 " batch inputs but its table lists " + std::to_string(specs.size())};
  }
  for (size_t k = 0; k < out.size(); ++k) {
    const ProgramInput& in = p.inputs[out[k]];
    if (in.name != specs[k].name || in.type != specs[k].type) {
      return Error{"internal: program @" + p.name + " input " + in.name + " " +
                   in.type.to_string() + " does not match its table's " + specs[k].name + " " +
                   specs[k].type.to_string()};
    }
  }
  return out;
}

Status check_batch(const char* what, const std::vector<Tensor>& batch,
                   const std::vector<driver::TensorSpec>& specs) {
  if (batch.size() != specs.size()) {
    return Error{std::string(what) + " takes " + std::to_string(specs.size()) + " tensors, got " +
                 std::to_string(batch.size())};
  }
  return Status();
}

// A type whose dims are `rank` entries of `dims` from `first`.
Type pooled_type(DType dtype, int32_t rank, int32_t first, const int64_t* dims) {
  return Type{dtype, Shape(std::vector<int64_t>(dims + first, dims + first + rank))};
}

}  // namespace

std::vector<ValueEntry> value_entries(const ValueRow* rows, int count, const int64_t* dims) {
  std::vector<ValueEntry> out;
  out.reserve(count);
  for (const ValueRow* r = rows; r != rows + count; ++r) {
    const Type type = pooled_type(r->dtype, r->rank, r->dims, dims);
    Initializer init = r->init;
    if (r->stored != nullptr) {
      init = Initializer::stored_values(
          type, std::string(reinterpret_cast<const char*>(r->stored), r->stored_bytes),
          std::string("embedded:") + r->name);
    }
    out.push_back({r->name, type, r->kind, std::move(init), r->stream});
  }
  return out;
}

std::vector<driver::TensorSpec> tensor_specs(const TensorSpecRow* rows, int count,
                                             const int64_t* dims) {
  std::vector<driver::TensorSpec> out;
  out.reserve(count);
  for (const TensorSpecRow* r = rows; r != rows + count; ++r) {
    out.push_back({r->name, pooled_type(r->dtype, r->rank, r->dims, dims)});
  }
  return out;
}

namespace {

DeviceCode device_code(std::vector<GeneratedFn> (*kernels)(), const char* ptx,
                       const std::vector<std::string>& symbols) {
  DeviceCode code;
  if (kernels) code.host_kernels = kernels();
  if (ptx) code.module = ptx;
  code.symbols = symbols;
  return code;
}

}  // namespace

DeviceCode ModelTable::step_code() const { return device_code(step_kernels, step_ptx, step_symbols); }
DeviceCode ModelTable::eval_code() const { return device_code(eval_kernels, eval_ptx, eval_symbols); }

StatusOr<std::unique_ptr<CompiledModel>> CompiledModel::create(const ModelTable& table,
                                                               uint64_t seed, const Options& options) {
  std::unique_ptr<CompiledModel> m(new CompiledModel());
  m->table_ = &table;
  m->lr_ = table.lr;
  m->base_lr_ = table.lr;
  m->momentum_ = table.momentum;
  m->schema_.structural_hash = table.structural_hash;
  m->schema_.subgraphs = table.subgraphs;
  m->schema_.batch = table.checkpoint_batch;
  for (int i = 0; i < table.num_model_values; ++i) {
    m->schema_.params.push_back({table.values[i].name, table.values[i].type});
  }
  WEFT_ASSIGN_OR_RETURN(m->backend_, find_backend(table.backend));
  if (options.communicator && options.communicator->world_size() > 1 && !m->backend_->has(Feature::multi_rank)) {
    return m->backend_->unsupported(Feature::multi_rank);
  }
  BindOptions bind = options;
  bind.accumulate_steps = table.accumulate_steps;
  bind.step_input = kStep;
  if (table.step_program != nullptr) {
    WEFT_ASSIGN_OR_RETURN(m->step_, m->backend_->bind(table.step_program(), table.step_code(), bind));
    WEFT_ASSIGN_OR_RETURN(m->step_batch_, batch_inputs(m->step_->program(), table.step_inputs));
    m->lr_input_ = m->step_->find_input(kLr);
    m->step_input_ = m->step_->find_input(kStep);
    m->momentum_input_ = m->step_->find_input(kMomentum);
    for (const auto& [path, lr] : table.group_lrs) {
      // A group without trainable parameters has no input; nor may the default group.
      if (int at = m->step_->find_input(lr_input_name(path)); at >= 0) m->group_lr_inputs_.emplace_back(at, lr);
    }
    if ((m->lr_input_ < 0 && m->group_lr_inputs_.empty()) || m->step_input_ < 0) {
      return Error{"internal: the step program has no " + std::string(kLr) + " or " + kStep + " input"};
    }
  }
  // The eval forward runs no collectives.
  bind.communicator = nullptr;
  WEFT_ASSIGN_OR_RETURN(m->eval_, m->backend_->bind(table.eval_program(), table.eval_code(), bind));
  WEFT_ASSIGN_OR_RETURN(m->eval_batch_, batch_inputs(m->eval_->program(), table.eval_inputs));

  if (options.communicator && options.communicator->world_size() > 1) {
    if (!m->step_) {
      return Error{"data parallelism: model '" + table.name +
                   "' was compiled inference-only; it has no training step to run on " +
                   std::to_string(options.communicator->world_size()) + " ranks"};
    }
    // Every rank must run the same step (else the all_reduce calls disagree on their
    // sizes): a fingerprint of the step's Program and of the parameter table's shapes.
    std::string text = table.name + "\n" + table.options + "\n" + m->step_->program().to_string();
    for (const ValueEntry& v : table.values) text += v.name + " " + v.type.to_string() + "\n";
    WEFT_RETURN_IF_ERROR(collective::check_same_on_every_rank(
        *options.communicator, std::hash<std::string>{}(text),
        "data parallelism: the " + std::to_string(options.communicator->world_size()) +
            " ranks run different models (a binary built from another model, batch size, "
            "loss or optimizer on some rank); every rank must run the same binary"));
    // The step must average its gradients (weft.bzl's data_parallel), else every rank
    // would train alone on its shard.
    const std::vector<Invocation>& code = m->step_->program().code;
    if (std::none_of(code.begin(), code.end(), [](const Invocation& inv) {
          return inv.kind == Invocation::Kind::library && inv.node.op == Op::AllReduce;
        })) {
      return Error{"data parallelism: model '" + table.name +
                   "' was built without data_parallel = True (weft_library / weft_binary), "
                   "so its step does not average gradients over the " +
                   std::to_string(options.communicator->world_size()) +
                   " ranks; rebuild it with data_parallel = True"};
    }
  }

  // Every value from its initializer, into the executor that owns it.
  ProgramExecutor& owner = m->owner();
  for (const ValueEntry& v : table.values) {
    WEFT_ASSIGN_OR_RETURN(Tensor t, materialize(v.init, v.type, seed, v.stream));
    const int index = owner.find_input(v.name);
    if (index < 0) {
      // Not read by the Program (inference-only: the dropout generator's state): kept
      // here so that checkpoints still hold every value of the model.
      m->unbound_.emplace(v.name, std::move(t));
      continue;
    }
    WEFT_RETURN_IF_ERROR(owner.set_input(index, t));
    m->owner_index_.emplace(v.name, index);
  }
  const Program& owned = owner.program();
  for (size_t i = 0; i < owned.inputs.size(); ++i) {
    const std::optional<std::string> master = weight_copy_source(owned.inputs[i].name);
    if (master && m->owner_index_.count(*master)) {
      m->derived_.emplace(*master, static_cast<int>(i));
      WEFT_RETURN_IF_ERROR(m->refresh_derived(*master));
      continue;
    }
    if (owned.inputs[i].kind != InputKind::data && !m->owner_index_.count(owned.inputs[i].name)) {
      return Error{"internal: program @" + owned.name + " reads '" + owned.inputs[i].name +
                   "', which the parameter table lacks"};
    }
  }
  if (m->step_) {
    const Program& e = m->eval_->program();
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      if (e.inputs[i].kind == InputKind::data) continue;
      auto it = m->owner_index_.find(e.inputs[i].name);
      if (it == m->owner_index_.end()) {
        return Error{"internal: the eval program reads '" + e.inputs[i].name +
                     "', which the training step does not have"};
      }
      // Copied from the step's buffer before each evaluation: the same type, or no copy.
      const Type& in_step = owned.inputs[static_cast<size_t>(it->second)].type;
      if (e.inputs[i].type != in_step) {
        return Error{"internal: the eval program reads '" + e.inputs[i].name + "' as " + e.inputs[i].type.to_string() +
                     ", the training step holds it as " + in_step.to_string()};
      }
      m->eval_values_.emplace_back(static_cast<int>(i), it->second);
    }
  }
  m->comm_ = options.communicator;
  WEFT_RETURN_IF_ERROR(m->agree_with_other_ranks(/*source=*/""));
  return m;
}

// Data parallelism: every rank starts from rank 0's values; ranks that loaded different
// checkpoints are refused (runtime/collective/parameters.h).
Status CompiledModel::agree_with_other_ranks(const std::string& source) {
  if (!comm_ || comm_->world_size() <= 1) return Status();
  std::map<std::string, Tensor> values = this->values();
  WEFT_RETURN_IF_ERROR(collective::agree_on_parameters(*comm_, values, source));
  for (const auto& [name, value] : values) WEFT_RETURN_IF_ERROR(set_value(name, value));
  return Status();
}

StatusOr<double> CompiledModel::step(const std::vector<Tensor>& batch) {
  if (!step_) return Error{"model '" + table_->name + "' was compiled inference-only; it has no training step"};
  WEFT_RETURN_IF_ERROR(check_batch("step(...)", batch, table_->step_inputs));
  for (size_t k = 0; k < batch.size(); ++k) {
    WEFT_RETURN_IF_ERROR(step_->set_input(step_batch_[k], batch[k]));
  }
  return run_bound_step();
}

Status CompiledModel::prefetch(const std::vector<Tensor>& batch) {
  if (!step_) return Error{"model '" + table_->name + "' was compiled inference-only; it has no training step"};
  WEFT_RETURN_IF_ERROR(check_batch("prefetch(...)", batch, table_->step_inputs));
  for (size_t k = 0; k < batch.size(); ++k) {
    WEFT_RETURN_IF_ERROR(step_->prefetch_input(step_batch_[k], batch[k]));
  }
  return Status();
}

StatusOr<double> CompiledModel::run_step() {
  if (!step_) return Error{"model '" + table_->name + "' was compiled inference-only; it has no training step"};
  WEFT_RETURN_IF_ERROR(upload(*step_, step_batch_, step_staging_));
  return run_bound_step();
}

Status CompiledModel::set_scalar(int index, double value) {
  if (backend_->host_input_data) {
    void* p = backend_->host_input_data(*step_, index);
    if (step_->program().inputs[index].type.dtype == DType::i64) {
      *static_cast<int64_t*>(p) = static_cast<int64_t>(value);
    } else {
      *static_cast<float*>(p) = static_cast<float>(value);
    }
    return Status();
  }
  return step_->set_input(index, Tensor::scalar(step_->program().inputs[index].type.dtype, value));
}

Status CompiledModel::set_momentum(double momentum) {
  if (momentum_input_ < 0) {
    return Error{"model '" + table_->name + "' compiles its optimizer's momentum into the step; "
                 "build it with OptimizerSpec::with_scheduled_momentum() to schedule it"};
  }
  momentum_ = momentum;
  return Status();
}

StatusOr<double> CompiledModel::run_bound_step() {
  WEFT_RETURN_IF_ERROR(check_next_step(steps_));
  // set_lr(double) returns nothing: a rate that is not finite, or negative, is refused by
  // the step it would have ruined, before anything runs (the Trainer's rule,
  // training/learning_rate.h).
  WEFT_RETURN_IF_ERROR(check_set_lr(lr_));
  if (lr_input_ >= 0) WEFT_RETURN_IF_ERROR(set_scalar(lr_input_, lr_));
  for (const auto& [input, first] : group_lr_inputs_) {
    WEFT_RETURN_IF_ERROR(set_scalar(input, group_lr(first, lr_, base_lr_)));
  }
  WEFT_RETURN_IF_ERROR(set_scalar(step_input_, static_cast<double>(steps_ + 1)));
  if (momentum_input_ >= 0) WEFT_RETURN_IF_ERROR(set_scalar(momentum_input_, momentum_));
  WEFT_RETURN_IF_ERROR(step_->run());
  eval_values_fresh_ = false;
  ++steps_;
  return step_->output(0).get_double(0);
}

void* CompiledModel::input_data(ProgramExecutor& ex, int index, std::vector<Tensor>& staging,
                                int slot, int count) {
  if (backend_->host_input_data) return backend_->host_input_data(ex, index);
  if (staging.empty()) {
    const std::vector<int>& indices = &ex == step_.get() ? step_batch_ : eval_batch_;
    for (int i = 0; i < count; ++i) staging.emplace_back(ex.program().inputs[indices[i]].type);
  }
  return staging[slot].raw_data();
}

void* CompiledModel::step_input_data(int i) {
  return input_data(*step_, step_batch_[i], step_staging_, i, static_cast<int>(step_batch_.size()));
}

void* CompiledModel::eval_input_data(int i) {
  return input_data(*eval_, eval_batch_[i], eval_staging_, i, static_cast<int>(eval_batch_.size()));
}

Status CompiledModel::upload(ProgramExecutor& ex, const std::vector<int>& indices,
                             std::vector<Tensor>& staging) {
  for (size_t k = 0; k < staging.size(); ++k) WEFT_RETURN_IF_ERROR(ex.set_input(indices[k], staging[k]));
  return Status();
}

Status CompiledModel::push_eval_values() {
  if (eval_values_fresh_) return Status();
  for (const auto& [eval_index, owner_index] : eval_values_) {
    if (backend_->host_input_data) {
      std::memcpy(backend_->host_input_data(*eval_, eval_index),
                  backend_->host_input_data(*step_, owner_index),
                  eval_->program().inputs[eval_index].type.bytes());
    } else {
      WEFT_RETURN_IF_ERROR(eval_->set_input(eval_index, step_->input(owner_index)));
    }
  }
  eval_values_fresh_ = true;
  return Status();
}

Status CompiledModel::set_check_numerics(bool on) {
  if (!backend_->has(Feature::check_numerics)) return backend_->unsupported(Feature::check_numerics);
  for (ProgramExecutor* ex : {step_.get(), eval_.get()}) {
    if (ex) backend_->set_check_numerics(*ex, on);
  }
  return Status();
}

Status CompiledModel::set_profiling(bool on) {
  if (!step_) return Error{"--profile: this model is inference-only; it has no training step"};
  if (!backend_->has(Feature::profiler)) return backend_->unsupported(Feature::profiler);
  backend_->set_profiling(*step_, on);
  return Status();
}

std::string CompiledModel::profile_report() const {
  return step_ && backend_->profile_report ? backend_->profile_report(*step_, kProfileRows) : "";
}

StatusOr<std::vector<Tensor>> CompiledModel::evaluate(const std::vector<Tensor>& inputs) {
  WEFT_RETURN_IF_ERROR(check_batch("evaluate(...)", inputs, table_->eval_inputs));
  for (size_t k = 0; k < inputs.size(); ++k) {
    WEFT_RETURN_IF_ERROR(eval_->set_input(eval_batch_[k], inputs[k]));
  }
  WEFT_RETURN_IF_ERROR(run_bound_eval());
  std::vector<Tensor> outputs;
  for (int i = 0; i < eval_->num_outputs(); ++i) outputs.push_back(eval_->output(i));
  return outputs;
}

Status CompiledModel::run_eval() {
  WEFT_RETURN_IF_ERROR(upload(*eval_, eval_batch_, eval_staging_));
  return run_bound_eval();
}

Status CompiledModel::run_bound_eval() {
  if (step_) WEFT_RETURN_IF_ERROR(push_eval_values());
  return eval_->run();
}

std::map<std::string, Tensor> CompiledModel::values() const {
  std::map<std::string, Tensor> out = unbound_;
  for (const auto& [name, index] : owner_index_) out.emplace(name, owner().input(index));
  return out;
}

StatusOr<Tensor> CompiledModel::value(const std::string& name) const {
  if (auto u = unbound_.find(name); u != unbound_.end()) return u->second;
  auto it = owner_index_.find(name);
  if (it == owner_index_.end()) {
    return Error{"no parameter, state or optimizer slot named '" + name + "'"};
  }
  return owner().input(it->second);
}

Status CompiledModel::set_value(const std::string& name, const Tensor& value) {
  if (auto u = unbound_.find(name); u != unbound_.end()) {
    if (u->second.type() != value.type()) {
      return Error{"'" + name + "' is " + u->second.type().to_string() + ", not " +
                   value.type().to_string()};
    }
    u->second = value;
    return Status();
  }
  auto it = owner_index_.find(name);
  if (it == owner_index_.end()) {
    return Error{"no parameter, state or optimizer slot named '" + name + "'"};
  }
  WEFT_RETURN_IF_ERROR(owner().set_input(it->second, value));
  eval_values_fresh_ = false;
  return refresh_derived(name);
}

Status CompiledModel::refresh_derived(const std::string& name) {
  auto [from, to] = derived_.equal_range(name);
  if (from == to) return Status();
  const Tensor master = owner().input(owner_index_.at(name));
  for (auto it = from; it != to; ++it) {
    const Type& type = owner().program().inputs[static_cast<size_t>(it->second)].type;
    WEFT_RETURN_IF_ERROR(owner().set_input(it->second, derived_value(master, type)));
  }
  return Status();
}

StatusOr<std::optional<driver::LossScaleReading>> CompiledModel::loss_scale() const {
  const LossScaleKeys& keys = table_->loss_scale_keys;
  if (!owner_index_.count(keys.scale)) return std::optional<driver::LossScaleReading>();
  WEFT_ASSIGN_OR_RETURN(Tensor scale, value(keys.scale));
  WEFT_ASSIGN_OR_RETURN(Tensor skipped, value(keys.skipped_steps));
  return std::optional<driver::LossScaleReading>(
      driver::LossScaleReading{scale.get_double(0), static_cast<int64_t>(skipped.get_double(0))});
}

Status CompiledModel::save(const std::string& path) const {
  if (!collective::writes_checkpoints(comm_.get())) return Status();
  return save_checkpoint(path, schema_, values(), steps_);
}

Status CompiledModel::check_onnx_export() const {
  if (table_->onnx_refused.empty()) return Status();
  return Error{table_->name + " has no ONNX form: " + table_->onnx_refused};
}

Status CompiledModel::export_onnx(const std::string& path) const {
  WEFT_RETURN_IF_ERROR(check_onnx_export());
  return onnx_io::write_with_weights(path, table_->onnx, [this](const std::string& name) { return value(name); });
}

StatusOr<LoadReport> CompiledModel::load(const std::string& path, bool partial) {
  std::map<std::string, Tensor> values = this->values();
  // load_checkpoint checks every key's type before it commits anything, so the copies
  // below cannot fail: on any error nothing has changed.
  CheckpointScope scope;
  scope.strict = !partial;
  scope.subgraph_knob = "";  // a compiled model loads whole checkpoints only
  scope.optional_keys = table_->loss_scale_keys.names();  // none in a table written by hand
  scope.loss_scale = table_->loss_scale_keys;
  StatusOr<LoadReport> loaded = load_checkpoint(path, schema_, values, scope);
  // Data parallelism: the other ranks, waiting in their agreement, learn it at once.
  if (!loaded.ok() && comm_) return collective::agree_after_failed_load(*comm_, path, loaded.error());
  WEFT_ASSIGN_OR_RETURN(LoadReport report, std::move(loaded));
  for (const std::string& key : report.loaded) {
    if (auto u = unbound_.find(key); u != unbound_.end()) {
      u->second = values.at(key);
    } else if (auto it = owner_index_.find(key); it != owner_index_.end()) {
      WEFT_RETURN_IF_ERROR(owner().set_input(it->second, values.at(key)));
      WEFT_RETURN_IF_ERROR(refresh_derived(key));
    }
  }
  steps_ = report.step;
  eval_values_fresh_ = false;
  WEFT_RETURN_IF_ERROR(agree_with_other_ranks(path));
  return report;
}

}  // namespace weft::aot
