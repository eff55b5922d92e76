#pragma once
// What the training driver (training/driver/driver.h) trains: a compiled training step and
// its evaluation, however they were compiled — ahead of time (training/aot, emitted by the
// weft_binary / weft_library Bazel macros of [AOT]) or by the JIT (frontend's Trainer,
// through an adapter). The driver owns data, epochs, shuffling, the learning-rate schedule,
// checkpoints, evaluation and progress; a Trainable owns the step and the values it trains.
//
//   std::unique_ptr<driver::Trainable> model = ...;   // AOT class or Trainer adapter
//   model->set_lr(schedule.lr_at(t));
//   StatusOr<double> loss = model->step({images, labels});
//   StatusOr<std::vector<Tensor>> logits = model->evaluate({test_images});
//
// Shapes are static: every step takes tensors of exactly step_inputs()' types, every
// evaluation exactly eval_inputs()' types (dimension 0 is the batch of both; the driver
// pads a short last evaluation batch and drops the padding's outputs).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/shape.h"
#include "formats/checkpoint.h"
#include "runtime/backend.h"
#include "runtime/collective/communicator.h"
#include "runtime/tensor.h"

namespace weft::driver {

/// Dynamic loss scaling's state after the steps taken (TrainOptions::loss_scale,
/// autodiff/loss_scale.h).
struct LossScaleReading {
  double scale = 0;           ///< The scale the next step multiplies the loss by.
  int64_t skipped_steps = 0;  ///< Updates skipped so far for an inf or NaN gradient.
};

/// A named, typed tensor slot.
struct TensorSpec {
  std::string name;
  Type type;
};

class Trainable {
 public:
  virtual ~Trainable() = default;

  /// The tensors of one training step, in order: the network's inputs, then the target.
  virtual const std::vector<TensorSpec>& step_inputs() const = 0;
  /// The tensors of one evaluation (the network's inputs, eval mode), in order.
  virtual const std::vector<TensorSpec>& eval_inputs() const = 0;
  /// The evaluation's outputs (the network's outputs), in order.
  virtual const std::vector<TensorSpec>& eval_outputs() const = 0;

  /// One training step on `batch` (step_inputs() order and types); returns the loss.
  virtual StatusOr<double> step(const std::vector<Tensor>& batch) = 0;
  /// Starts copying `batch`, the next step's, to the device while the current step runs
  /// (#31's input overlap: ProgramExecutor::prefetch_input, on cuda a second stream); the
  /// step() given the same tensors then takes that copy. The caller keeps them unchanged
  /// until that step returns (training/data/loader.h's `held` = 2). Nothing by default.
  virtual Status prefetch(const std::vector<Tensor>& /*batch*/) { return Status(); }
  /// The network in eval mode on `inputs` (eval_inputs() order and types).
  virtual StatusOr<std::vector<Tensor>> evaluate(const std::vector<Tensor>& inputs) = 0;

  /// The learning rate fed to the following steps.
  virtual void set_lr(double lr) = 0;
  virtual double lr() const = 0;
  /// Whether the step takes its momentum (SGD, RMSprop) or β1 (Adam, AdamW, RAdam) as the
  /// input weft.momentum (built with OptimizerSpec::with_scheduled_momentum), so that a
  /// schedule cycling it (LrSchedule::momentum_at: OneCycleLR, CyclicLR) can set it.
  virtual bool takes_momentum() const = 0;
  /// The momentum fed to the following steps; an error when !takes_momentum().
  virtual Status set_momentum(double momentum) = 0;
  /// Steps taken so far (restored by load()).
  virtual int64_t steps() const = 0;
  /// Loss scaling's scale and skipped count, read back from the step's state when called
  /// (the step itself never reads them); nullopt for a step without loss scaling (the
  /// default; an f16 step has it: a weft_binary built with precision = "f16", or the JIT
  /// Trainer at TrainOptions::precision f16).
  virtual StatusOr<std::optional<LossScaleReading>> loss_scale() const {
    return std::optional<LossScaleReading>();
  }

  /// --check-numerics: while on, a step or evaluation stops at the first op producing a
  /// NaN or an infinity and its error names that op and its source location
  /// (runtime/reference/numerics.h). Slow; for debugging.
  virtual Status set_check_numerics(bool on) = 0;
  /// --profile: while on, every step times each kernel; profile_report() prints the table
  /// of runtime/cpu/executor.h (top kernels, share of the step, GFLOP/s, GB/s). An error
  /// when the model runs on a backend without a profiler.
  virtual Status set_profiling(bool on) = 0;
  virtual std::string profile_report() const = 0;

  /// --export-onnx: whether export_onnx can write this model (checked before training);
  /// otherwise an error saying why.
  virtual Status check_onnx_export() const {
    return Error{"this model has no ONNX form to write (--export-onnx is a training binary's: weft_binary)"};
  }
  /// Writes the eval-mode forward with the current values as an opset-17 ONNX model,
  /// atomically (interop/onnx/weightless.h).
  virtual Status export_onnx(const std::string& /*path*/) const { return check_onnx_export(); }

  /// Parameters, state, optimizer slots and the step count, as safetensors, written
  /// atomically (the Trainer's checkpoint format: the same keys and metadata).
  virtual Status save(const std::string& path) const = 0;
  /// Loads such a checkpoint; on any error nothing changes. Strict: a checkpoint lacking
  /// an expected tensor or holding an unexpected one is refused, both listed; `partial`
  /// (--partial-load) loads what matches and reports the rest.
  virtual StatusOr<LoadReport> load(const std::string& path, bool partial) = 0;
};

/// How make_compiled_model makes its model: what the command line decides about it (the
/// driver fills it from its flags in one place: driver.h's model_options).
struct ModelOptions {
  /// Parameters and state start from their initializers with this seed (--seed).
  uint64_t seed = 0;
  /// How its Programs bind (runtime/backend.h's BindOptions, passed on as they are: a
  /// generated factory's CompiledModelOptions, the JIT adapters' TrainOptions::bind):
  ///  - num_threads: 0, $WEFT_NUM_THREADS or every core (--threads);
  ///  - max_memory: the bytes a compiled Program may need, its arena and inputs, checked
  ///    before they are allocated (--max-memory; the executors' memory check); 0: the
  ///    memory available;
  ///  - tf32: a cuda model's f32 GEMMs and convolutions on TF32 tensor cores (--tf32); a
  ///    cpu model ignores it;
  ///  - communicator: runs the step's gradient all_reduce ops (--data-parallel:
  ///    collective::world_from_environment(), or the backend's communicator over it);
  ///    with more than one rank the model checks that every rank built the same step.
  ///    nullptr: one process;
  ///  - all_reduce_bucket_bytes: more than one rank, the gradients' all_reduce calls are
  ///    bucketed up to this many bytes (--bucket-mb; PyTorch DDP's 25 MiB); 0: one
  ///    reduction per gradient;
  ///  - first_all_reduce_bucket_bytes: more than one rank, the first bucket closes at
  ///    this many bytes, or at all_reduce_bucket_bytes when that is smaller
  ///    (--first-bucket-mb; PyTorch DDP's 1 MiB), so that the first reduction starts
  ///    early in the backward pass.
  /// The accumulation fields are the model's own (its table's, its optimizer's).
  BindOptions bind = {};
};

/// The model a training binary was built with, made as `options` say. Declared here for
/// the driver's main(); defined by the C++ source that the weft_binary macro generates
/// (tools/aot/generate_main.cc: a CompiledModel bound with `options.bind`) —
/// or, in the driver's own tests, by an adapter over the JIT Trainer.
StatusOr<std::unique_ptr<Trainable>> make_compiled_model(const ModelOptions& options);

/// The backend the model of make_compiled_model was compiled for ("cpu", "cuda";
/// runtime/backend.h), known without making it (for --help and flag errors). Defined next
/// to make_compiled_model.
std::string compiled_model_backend();

/// The precision the model of make_compiled_model was compiled for ("f32", "bf16",
/// "f16"; weft_binary's `precision`), known without making it (for --help and the
/// --precision check). Defined next to make_compiled_model.
std::string compiled_model_precision();

}  // namespace weft::driver
