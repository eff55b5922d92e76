#pragma once
// A model compiled ahead of time, at run time: what the code that the weft_library /
// weft_binary Bazel macros generate (tools/aot/weft.bzl) instantiates. The generator
// emits a ModelTable — the backend it compiled for, the Programs of the training step and
// of the eval-mode forward with their device code (cpu: the kernels' addresses, object
// code linked into the binary; cuda: one PTX module per Program and its kernels' entry
// symbols), the parameter table — and a typed class over CompiledModel; this file holds
// everything else, and needs only weft's runtime (no frontend, passes, MLIR or LLVM).
//
// Devices. The table's backend is looked up in the backend registry (runtime/backend.h),
// which binds both Programs as ProgramExecutors; the generated library links that
// backend's registration (//runtime/cpu:backend or //runtime/cuda:backend). On cuda the
// executor's defaults apply (the whole step as one CUDA graph, host fallback refused), and
// what the cuda backend lacks is an error naming it: set_check_numerics, set_profiling,
// and a communicator of more than one rank. The typed accessors (step_input_data) point
// into the executor's own input buffers on cpu (zero-copy); on cuda into host staging
// buffers that run_step() / run_eval() upload before the step.
//
//   // Generated (bazel-bin/examples/fashion_mnist/train_model.h):
//   StatusOr<std::unique_ptr<weft::aot::CompiledModel>> m = weft::aot::CompiledModel::create(
//       table, /*seed=*/0, {.num_threads = 0, .communicator = nullptr});
//   (*m)->set_lr(1e-3);
//   StatusOr<double> loss = (*m)->step({images, labels});
//   (*m)->save("cnn.safetensors");               // the Trainer's checkpoint format
//
// Values. Parameters, state and optimizer slots live in the step executor's input
// buffers (updated in place by each step). create() fills them from their initializers
// with materialize(init, type, seed, stream), stream = parameter_stream(name) (training/init.h), exactly
// as the Trainer does, so an AOT binary and the JIT Trainer start from the same values
// and, step for step, compute the same losses. The eval executor gets a copy of the
// values it reads before each evaluate().

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "interop/onnx/weightless.h"
#include "ir/initializer.h"
#include "formats/checkpoint.h"
#include "runtime/collective/communicator.h"
#include "runtime/backend.h"
#include "training/driver/trainable.h"
#include "runtime/program.h"

namespace weft::aot {

/// One row of the parameter table: a parameter or state of the model, or an optimizer
/// slot.
struct ValueEntry {
  std::string name;  ///< The checkpoint key (`0.weight`, `optimizer.0.weight.exp_avg`).
  Type type;
  InputKind kind = InputKind::param;
  Initializer init;
  /// The Philox stream it is drawn from: parameter_stream(name) (training/init.h),
  /// computed by the generator.
  uint64_t stream = 0;
};

/// The generated source holds the parameter table and the tensor specs as constant rows
/// (string literals, dims as a range of one shared pool) and builds the ModelTable from
/// them with the two functions below: data, which compiles in seconds at -O2, where code
/// that pushes every entry took several times longer.
struct ValueRow {
  const char* name;
  DType dtype;
  int32_t rank;
  int32_t dims;  ///< The first of `rank` entries of the dims pool.
  InputKind kind;
  Initializer init;
  uint64_t stream;
  /// A stored initializer's bytes (an imported model's weights, embedded in the binary
  /// by the assembler), or null.
  const unsigned char* stored = nullptr;
  uint64_t stored_bytes = 0;
};

struct TensorSpecRow {
  const char* name;
  DType dtype;
  int32_t rank;
  int32_t dims;
};

/// The entries of `count` rows (`rows` may be null when `count` is 0).
std::vector<ValueEntry> value_entries(const ValueRow* rows, int count, const int64_t* dims);
std::vector<driver::TensorSpec> tensor_specs(const TensorSpecRow* rows, int count,
                                             const int64_t* dims);

/// What the generator emits for one model (tools/aot/generate_main.cc).
struct ModelTable {
  std::string name;     ///< The target's name.
  std::string options;  ///< The generator's compile options, as flags (for tests and --help).
  /// The model's parameters and state in graph-input order (the checkpoint's parameter
  /// table), then the optimizer slots.
  std::vector<ValueEntry> values;
  int num_model_values = 0;      ///< How many of `values` are the model's.
  uint64_t structural_hash = 0;  ///< frontend's Model::structural_hash (checkpoints).
  /// Each labelled subgraph's structure and hash (frontend's checkpoint_schema), written
  /// into every checkpoint so that a Trainer can load one subgraph of it, checked.
  std::vector<CheckpointSchema::Subgraph> subgraphs;
  int64_t checkpoint_batch = 0;  ///< The batch those structures were built for (weft.batch).
  double lr = 1e-3;              ///< The optimizer's base learning rate.
  /// Each parameter group's path and first lr (OptimizerSpec::groups): its step input
  /// `weft.lr.PATH` is fed that lr scaled as the base one is (lr() / ModelTable::lr), as
  /// Trainer::set_lr does.
  std::vector<std::pair<std::string, double>> group_lrs;
  /// The optimizer's first momentum (OptimizerSpec::first_momentum), fed to the step's
  /// weft.momentum input where it has one (OptimizerSpec::with_scheduled_momentum) until
  /// set_momentum changes it.
  double momentum = 0;
  /// Gradient accumulation's window (OptimizerSpec::accumulate_steps; 1: none): the
  /// step takes its update every accumulate_steps-th call. Bound with it
  /// (BindOptions::accumulate_steps), a cuda step with NCCL reduces the accumulated
  /// gradients on a window's last micro-batch only.
  int64_t accumulate_steps = 1;

  std::vector<driver::TensorSpec> step_inputs;   ///< Empty when inference-only.
  std::vector<driver::TensorSpec> eval_inputs;
  std::vector<driver::TensorSpec> eval_outputs;

  /// The eval forward as an ONNX model without its weights (interop/onnx/weightless.h),
  /// which export_onnx completes with the trained values; or, when `onnx_refused` is not
  /// empty, why the model has no ONNX form (the exporter's error).
  onnx_io::WeightlessModel onnx;
  std::string onnx_refused;

  /// The backend the Programs were compiled for (runtime/backend.h): "cpu" or "cuda".
  std::string backend = "cpu";
  /// The step's precision (weft_library's `precision`, TrainOptions::precision): f32, or
  /// mixed precision bf16 / f16. Parameters, optimizer slots and checkpoints are f32 at
  /// every precision; the eval forward is f32. A mixed-precision step also reads each
  /// trained weight's low-precision copy (`weft.copy.NAME`, passes/weight_copies.h), which
  /// is no row of `values`: create(), set_value() and load() derive it from its weight
  /// (training/derived_state.h), the step updates it.
  DType precision = DType::f32;
  /// The state names of dynamic loss scaling (autodiff/loss_scale.h: the scale, its growth
  /// tracker, the skipped-update count), written into every table by the generator. The
  /// step has them as values when it scales its loss (f16); a checkpoint holds them
  /// exactly when its run did, so every load takes them as optional keys: an f16 model's
  /// checkpoint loads into an f32 or bf16 one and back.
  LossScaleKeys loss_scale_keys;

  /// The Programs (codegen/program_source.h); step_* are null when the library is
  /// inference-only. Their device code: cpu, the kernels' addresses (*_kernels); cuda,
  /// one PTX module per Program and the entry symbol of each of its kernels (*_ptx,
  /// *_symbols; the *_kernels are null).
  Program (*step_program)() = nullptr;
  std::vector<GeneratedFn> (*step_kernels)() = nullptr;
  Program (*eval_program)() = nullptr;
  std::vector<GeneratedFn> (*eval_kernels)() = nullptr;
  const char* step_ptx = nullptr;
  std::vector<std::string> step_symbols;
  const char* eval_ptx = nullptr;
  std::vector<std::string> eval_symbols;

  /// The step's or the eval forward's device code, as the backend binds it.
  DeviceCode step_code() const;
  DeviceCode eval_code() const;
};

/// The table of the model a binary is built with: defined, like
/// driver::make_compiled_model, by the generated NAME_factory library.
const ModelTable& linked_model_table();

/// How a CompiledModel runs: the options its Programs are bound with (runtime/backend.h),
/// as every backend takes them — host threads (0: $WEFT_NUM_THREADS or every core); the
/// most bytes each Program may need, its arena and inputs (create() fails, naming the
/// largest buffers, before allocating them; 0: the memory the device has available);
/// TF32 (cuda, --tf32; the cpu ignores it); and data parallelism: the communicator that
/// runs the step's all_reduce ops (the generator always emits them: a mean over the
/// ranks of every gradient and of the loss; nullptr or collective::single_process(): one
/// process, where they change nothing; with more than one rank, collective::mpi_world()
/// under mpirun, create() checks that every rank has the same model and step, and step()
/// returns the loss averaged over the ranks) with its bucket sizes (PyTorch DDP's 25 MiB
/// buckets and 1 MiB first bucket; 0: one call per gradient). The accumulation fields are
/// the table's (ModelTable::accumulate_steps): create() sets them.
using CompiledModelOptions = BindOptions;

class CompiledModel : public driver::Trainable {
 public:
  using Options = CompiledModelOptions;
  /// Binds the Programs of `table` (which must outlive the model) on its backend and
  /// initializes every value from `seed`. Errors: a backend this binary does not link, a
  /// device that is absent ("no CUDA device: ..."), an option the backend lacks.
  static StatusOr<std::unique_ptr<CompiledModel>> create(const ModelTable& table, uint64_t seed,
                                                         const Options& options = {});

  const ModelTable& table() const { return *table_; }
  /// The backend the model runs on (table().backend's entry in the registry).
  const Backend& backend() const { return *backend_; }
  bool inference_only() const { return step_ == nullptr; }

  // ---- driver::Trainable
  const std::vector<driver::TensorSpec>& step_inputs() const override { return table_->step_inputs; }
  const std::vector<driver::TensorSpec>& eval_inputs() const override { return table_->eval_inputs; }
  const std::vector<driver::TensorSpec>& eval_outputs() const override { return table_->eval_outputs; }
  StatusOr<double> step(const std::vector<Tensor>& batch) override;
  /// The next step's batch copied to the device while the current step runs (the step
  /// executor's prefetch_input; on cpu nothing).
  Status prefetch(const std::vector<Tensor>& batch) override;
  StatusOr<std::vector<Tensor>> evaluate(const std::vector<Tensor>& inputs) override;
  void set_lr(double lr) override { lr_ = lr; }
  double lr() const override { return lr_; }
  bool takes_momentum() const override { return momentum_input_ >= 0; }
  Status set_momentum(double momentum) override;
  int64_t steps() const override { return steps_; }
  /// The loss scale and skipped updates read from the step's state (an f16 model's);
  /// nullopt for a step without loss scaling.
  StatusOr<std::optional<driver::LossScaleReading>> loss_scale() const override;
  /// Errors on a backend without check-numerics (cuda), naming it.
  Status set_check_numerics(bool on) override;
  /// Errors on a backend without a profiler (cuda), naming it.
  Status set_profiling(bool on) override;
  std::string profile_report() const override;
  /// Atomically; data parallel, rank 0 alone writes (collective::writes_checkpoints).
  Status save(const std::string& path) const override;
  /// Errors when the table has no ONNX form (ModelTable::onnx_refused).
  Status check_onnx_export() const override;
  Status export_onnx(const std::string& path) const override;
  StatusOr<LoadReport> load(const std::string& path, bool partial) override;

  // ---- In place, without copies (what the generated typed accessors use).
  /// The buffer of step input `i` (step_inputs() order): write the next batch there. On
  /// a backend whose buffers are not host memory (cuda), a host staging buffer that
  /// run_step() uploads.
  void* step_input_data(int i);
  /// One step on the batch already in the step input buffers; returns the loss.
  StatusOr<double> run_step();
  /// The buffer of eval input `i` (eval_inputs() order); staged like step_input_data.
  void* eval_input_data(int i);
  /// The eval-mode forward on the inputs already in the eval input buffers.
  Status run_eval();
  /// Eval output `i` of the last run_eval() or evaluate().
  Tensor eval_output(int i) const { return eval_->output(i); }

  /// Every parameter, state and optimizer slot by name (read from the executors).
  std::map<std::string, Tensor> values() const;
  /// A copy of one value; an error names an unknown key.
  StatusOr<Tensor> value(const std::string& name) const;
  /// Replaces one value; its type must match.
  Status set_value(const std::string& name, const Tensor& value);

  /// The executors, for Program listings (step is null when inference-only).
  ProgramExecutor* step_executor() { return step_.get(); }
  ProgramExecutor* eval_executor() { return eval_.get(); }

 private:
  CompiledModel() = default;
  /// The executor that owns the values: the step's, or the eval's when inference-only.
  ProgramExecutor& owner() const { return step_ ? *step_ : *eval_; }
  /// Copies the values the eval executor reads from the step executor.
  Status push_eval_values();
  /// More than one rank: the values made rank 0's, or an error when ranks loaded
  /// different checkpoints (collective::agree_on_parameters; `source` as there).
  Status agree_with_other_ranks(const std::string& source);
  /// Input `index` of `ex` in host memory, or a staging tensor in `staging` (`slot` of
  /// `count`) when the backend has none.
  void* input_data(ProgramExecutor& ex, int index, std::vector<Tensor>& staging, int slot, int count);
  /// Copies the staging tensors (if any) into `ex`'s inputs `indices`.
  Status upload(ProgramExecutor& ex, const std::vector<int>& indices, std::vector<Tensor>& staging);
  /// Computes the derived inputs of master `name` again (training/derived_state.h: a
  /// mixed-precision step's weight copies), after the master changed outside the step.
  Status refresh_derived(const std::string& name);
  /// Writes a scalar input (the learning rate, the step count).
  Status set_scalar(int index, double value);
  StatusOr<double> run_bound_step();
  Status run_bound_eval();

  const ModelTable* table_ = nullptr;
  const Backend* backend_ = nullptr;
  CheckpointSchema schema_;
  std::unique_ptr<ProgramExecutor> step_, eval_;
  /// Host staging of the batch buffers where the backend has no host address for them
  /// (created by the first step_input_data / eval_input_data).
  std::vector<Tensor> step_staging_, eval_staging_;
  std::vector<int> step_batch_, eval_batch_;  ///< Executor input index of each batch tensor.
  int lr_input_ = -1, step_input_ = -1;
  int momentum_input_ = -1;  ///< weft.momentum, or -1: the momentum is compiled in.
  double momentum_ = 0;
  /// The step input of each parameter group's lr, and that group's first lr.
  std::vector<std::pair<int, double>> group_lr_inputs_;
  double base_lr_ = 1e-3;  ///< ModelTable::lr: what the groups' lrs scale against.
  std::map<std::string, int> owner_index_;    ///< Value name -> owner() input index.
  std::map<std::string, Tensor> unbound_;     ///< Values no Program reads.
  /// Master name -> owner() input index of each input derived from it (never a value:
  /// not in values(), checkpoints or the parameter table).
  std::multimap<std::string, int> derived_;
  /// (eval input index, owner input index) of every value the eval Program reads.
  std::vector<std::pair<int, int>> eval_values_;
  bool eval_values_fresh_ = false;
  double lr_ = 1e-3;
  int64_t steps_ = 0;
  std::shared_ptr<collective::Communicator> comm_;  ///< Options' communicator.
};

}  // namespace weft::aot
