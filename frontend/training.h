#pragma once
// Training: a built network, a loss and an optimizer compiled into ONE graph — forward,
// loss, backward and the optimizer update — executed once per step. Parameters,
// state (batch-norm statistics, the dropout generator) and optimizer slots live in a
// value table the step updates in place; the learning rate and the step count are
// runtime inputs, so schedules never recompile.
//
//   auto net = FlowBuilder::from(Linear(784, 256)).through(ReLU()).through(Linear(256, 10)).build();
//   auto trainer = Trainer::compile(*net, {{"x", f32({128, 784})}}, LossSpec::cross_entropy(),
//                                   OptimizerSpec::adam());
//   for (...) { StatusOr<double> loss = trainer->step({x, labels}); }
//   auto logits = trainer->evaluate({test_x});        // eval mode, any batch size
//   trainer->save("model.safetensors");
//
// This is the top of weft's stack: it uses the frontend, autodiff, the passes and a
// backend: "cpu" (the default: fused, planned, MLIR-generated kernels on runtime/cpu,
// where parameters and optimizer state stay in the executor's buffers between steps),
// "cuda" (the same Program on one GPU through runtime/cuda, parameters and optimizer
// state in GPU memory; a model with an op that has no CUDA kernel is refused unless
// TrainOptions allow a host fallback, runtime/cuda/library.h) or "reference" (the
// reference interpreter, the oracle).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "autodiff/loss_scale.h"
#include "autodiff/optimizer.h"
#include "frontend/checkpoint.h"
#include "frontend/flow.h"
#include "frontend/losses.h"
#include "runtime/backend.h"
#include "runtime/collective/communicator.h"
#include "runtime/executor.h"
#include "runtime/tensor.h"
#include "training/derived_state.h"
#include "training/monitor/metrics.h"

namespace weft::codegen {
struct Target;  // codegen/targets.h
}  // namespace weft::codegen

namespace weft {

/// The loss between the network's output and a target input.
struct LossSpec {
  enum class Kind {
    CrossEntropy, Nll, Mse, L1, SmoothL1, Huber, PoissonNll, Bce, BceWithLogits, KlDiv,
    SigmoidFocal, HingeEmbedding,
    NetworkOutput  ///< The network's output is the loss itself (network_output()).
  };
  Kind kind = Kind::CrossEntropy;
  Reduction reduction = Reduction::Mean;
  double label_smoothing = 0;  ///< cross_entropy
  std::vector<double> weight;  ///< cross_entropy, nll: one per class, or empty.
  double beta = 1;             ///< smooth_l1
  double delta = 1;            ///< huber
  loss::PoissonNllOptions poisson;  ///< poisson_nll (its reduction is `reduction`'s).
  loss::FocalOptions focal;         ///< sigmoid_focal (its reduction is `reduction`'s).
  double margin = 1;                ///< hinge_embedding

  static LossSpec cross_entropy(double label_smoothing = 0, std::vector<double> weight = {});
  static LossSpec nll(std::vector<double> weight = {});
  static LossSpec mse();
  static LossSpec l1();
  static LossSpec smooth_l1(double beta = 1);
  static LossSpec huber(double delta = 1);
  static LossSpec poisson_nll(bool log_input = true, bool full = false, double eps = 1e-8);
  static LossSpec bce();
  static LossSpec bce_with_logits();
  static LossSpec kl_div();
  static LossSpec sigmoid_focal(double alpha = 0.25, double gamma = 2);
  static LossSpec hinge_embedding(double margin = 1);
  /// No loss of the Trainer's: the network's output, a floating scalar, is the loss,
  /// and the step takes no target. For a flow that ends in a loss module whose other
  /// operands are inputs of the flow, e.g. CTCLoss (targets and lengths through
  /// uses({...})) or MarginRankingLoss; step() then takes the flow's inputs alone.
  static LossSpec network_output();
  /// Whether the step takes a target after the inputs (all but network_output()).
  bool takes_target() const { return kind != Kind::NetworkOutput; }
  /// Emits this loss of the network's output `out` against `target` (kNoValue when
  /// !takes_target()) into `e`'s graph: the scalar the Trainer differentiates.
  ValueId emit(Emitter& e, ValueId out, ValueId target) const;
  /// Class-index targets (i64 [batch]) for cross_entropy and nll; the output's type
  /// otherwise.
  bool integer_targets() const { return kind == Kind::CrossEntropy || kind == Kind::Nll; }
};

struct TrainOptions {
  uint64_t seed = 0;                 ///< Parameter initialization and dropout.
  std::string backend = "cpu";       ///< "cpu", "cuda" or "reference".
  /// How the compiled step and evaluations bind to the backend's device: the options
  /// every backend is bound with (runtime/backend.h's BindOptions, as the AOT models'
  /// are), given to the target as they are (codegen::CompileOptions::bind):
  ///  - num_threads (cpu; 0: $WEFT_NUM_THREADS or every core) and max_memory (cpu, cuda:
  ///    the most bytes a compiled step may plan; 0: MemAvailable, or the GPU's free
  ///    memory);
  ///  - tf32 (cuda): TF32 tensor cores for the f32 GEMMs and convolutions (PyTorch's
  ///    torch.backends.cuda.matmul.allow_tf32): values stay f32 in memory, the
  ///    contractions' operands are rounded to a 10-bit mantissa and accumulate in f32 —
  ///    faster on Ampere and later, and outside the reference's f32 tolerance, hence off
  ///    by default. Ignored by the other backends. Not yet run on a GPU;
  ///  - communicator: data parallelism (DESIGN.md, decision 11; cpu over MPI or Gloo,
  ///    cuda over NCCL). When set, the step averages every parameter gradient over the
  ///    communicator's ranks (an all_reduce {reduction="mean"} op before the optimizer
  ///    update, autodiff/optimizer.h) and returns the loss averaged over the ranks too.
  ///    Every rank compiles the same network and feeds step() its own equal share of
  ///    each global batch (collective::shard_batch); compile() broadcasts rank 0's
  ///    parameters (a rank seeded differently starts from rank 0's) and load() refuses
  ///    ranks that loaded different checkpoints (collective::agree_on_parameters), so the
  ///    parameters start equal and stay equal; with a mean loss the step is then the step
  ///    of one process on the global batch. Batch-norm statistics stay per rank unless
  ///    SyncBatchNorm (BatchNormOptions::sync), and dropout draws the same mask pattern on
  ///    every rank. Backends "cpu" and "cuda" when the world size is above 1; compile()
  ///    checks (one small all_reduce) that every rank compiled the same step. nullptr:
  ///    one process, no all_reduce ops; collective::single_process(): the ops, each
  ///    changing nothing. collective::world_from_environment()
  ///    (runtime/collective/world.h) gives the launch's (mpirun, srun, the torchrun
  ///    variables), as the driver's --data-parallel does. On cuda compile() makes NCCL's
  ///    communicator from it (the backend's Backend::communicator_for: the unique id sent
  ///    over this communicator, the GPU of `local_rank`, a watchdog of
  ///    `collective_timeout`); pass an NCCL communicator made already (the driver's) and
  ///    it is used as it is. Not yet run on a GPU;
  ///  - all_reduce_bucket_bytes (more than one rank: the gradients' all_reduce calls are
  ///    bucketed up to this many bytes; 0: one call per gradient) and
  ///    first_all_reduce_bucket_bytes (the first bucket closes at this many bytes,
  ///    PyTorch DDP's 1 MiB first bucket, so the first reduction starts early in the
  ///    backward pass).
  /// Its accumulation fields are the step's own: compile() sets them from
  /// OptimizerSpec::accumulate_steps.
  BindOptions bind = {};
  /// cuda: replay each step as one captured CUDA graph (false: launch by launch, for
  /// comparison and debugging; cuda::ExecutorOptions::cuda_graph).
  bool cuda_graph = true;
  /// cuda: run the ops with no CUDA kernel on the host instead of refusing the model
  /// (a debugging path; cuda::ExecutorOptions::allow_host_fallback).
  bool allow_host_fallback = false;
  /// Find the attention pattern (softmax(q·scale·kᵀ + mask)·v) before autodiff
  /// (passes/fuse_attention.h), so that the step holds `attention` and one `attention_grad`
  /// (dq, dk, dv) instead of their primitives. cuda runs both on its f32 attention kernels
  /// (runtime/cuda/attention_kernels.h, not yet run on a GPU); cpu and reference decompose
  /// them (passes/decompose_composites.h: on the CPU the step time is the same either way).
  /// Off by default until the kernels have run and been measured on a GPU (issue #31):
  /// tests/cuda/suite_check.sh times the suite's transformer both ways
  /// (`bench:suite --fuse-attention=both`).
  bool fuse_attention = false;
  /// Stop a step or evaluation at the first op producing a NaN or infinity, naming it and
  /// its builder call site (runtime/reference/numerics.h); slow, for debugging. cpu and
  /// reference only (cuda refuses it).
  bool check_numerics = false;
  /// cuda with a communicator: this process's index among the ranks of its machine, the
  /// GPU it trains on (collective::local_rank() reads the launcher's variable).
  int local_rank = 0;
  /// cuda with a communicator: a step whose NCCL reductions have not finished after this
  /// long makes the process abort NCCL and exit non-zero, naming the rank and the step
  /// (the driver's --collective-timeout; runtime/collective/watchdog.h).
  std::chrono::milliseconds collective_timeout = std::chrono::seconds(300);
  /// cpu, more than one rank: each bucket's reduction runs while the backward pass goes
  /// on, waited for only by the update that reads it (cpu::ExecutorOptions::
  /// overlap_all_reduce); false: each is waited for as soon as it starts. Bitwise equal.
  bool overlap_all_reduce = true;
  /// More than one rank: a weight gradient of at least this many bytes that one GEMM
  /// computes is computed in `split_gradient_blocks` row blocks instead, each reduced on
  /// its own as soon as it is produced (passes/split_gradients.h), so the first block's
  /// reduction runs while the next block's GEMM does (each block closes its all_reduce
  /// bucket, runtime/collective/bucket_plan.h); 0: never, the default (on the 2-core
  /// machines it hid less of the reduction than one bucket after the whole GEMM:
  /// bench/RESULTS.md, "a weight gradient split across buckets"; 1 MiB splits the
  /// 512×512 gradient of bench/ddp_overlap.sh's MLP). With the bucket sizes (bind), what
  /// decides when reductions start. The same split on every rank and in both overlap
  /// modes; one process (no communicator, or one rank) is never split.
  int64_t split_gradient_bytes = 0;
  int split_gradient_blocks = 2;
  /// cpu and cuda: unroll the model's loops in its Program instead of running each as a
  /// loop over its body (codegen::CompileOptions::unroll_loops), for comparison.
  bool unroll_loops = false;
  /// Every loop's gradient recomputes its body's intermediates from the saved carries,
  /// as `.recompute()` on each loop (and for GRU / LSTM): less memory (only the carries
  /// are stacked), one more forward pass of each body (bench/loops measures both).
  bool recompute_loops = false;
  /// Dynamic loss scaling (PyTorch's GradScaler, autodiff/loss_scale.h), for f16
  /// training: on by default exactly when `precision` is f16 (`enabled` says otherwise
  /// when set). When on the step differentiates the loss times a
  /// scale held as state (`loss_scale`, saved in checkpoints), unscales the gradients,
  /// skips an update whose gradients hold an inf or a NaN (no parameter or optimizer
  /// slot changes; `skipped_steps` counts it) and backs the scale off, and grows it
  /// after `growth_interval` clean updates — all inside the step, with no host read.
  /// The loss step() returns stays unscaled.
  LossScaleOptions loss_scale = {};
  /// Mixed precision (PyTorch's autocast): f32, or bf16 / f16, in which the step runs
  /// its contractions (matmul, convolutions) while reductions, softmax, norms, losses and
  /// exp/log stay in f32 (passes/autocast.h; ir/ops.def's autocast table), inside loop
  /// bodies too (an LSTM's or GRU's recurrent products in the low dtype, its weights cast
  /// once per step, outside the loop; its carries f32). Parameters,
  /// their gradients, optimizer state, the loss and checkpoints stay f32 (master copies),
  /// so a checkpoint loads at any precision. f16 turns on loss_scale unless it says
  /// otherwise. Evaluation runs in f32.
  DType precision = DType::f32;
  /// Mixed precision: the step keeps a low-precision copy of each trained parameter as
  /// state (`weft.copy.NAME`, passes/weight_copies.h), written by the update as the cast
  /// of the updated parameter, instead of casting every parameter in every step. The
  /// numbers are the same bit for bit; the copies are computed from the f32 parameters
  /// whenever those change outside the step (compile, set_value, load) and never appear
  /// in values() or checkpoints. false: cast in every step (for comparison).
  bool weight_copies = true;
};

/// A statistic of a tagged activation that `Trainer::collect` computes in the step.
enum class Statistic { mean, std, abs_mean, norm, min, max };
/// "mean", "std", "abs_mean", "norm", "min", "max": the last part of the metric's name.
const char* statistic_name(Statistic s);

class Trainer {
 public:
  /// Compiles the training step of `net` for `inputs` (the stream input first, then the
  /// flow's input({...}) names). The step's batch is those inputs followed by the target.
  /// The loss's nodes carry the location of this call (builder path `loss`), so errors
  /// and --check-numerics name it.
  static StatusOr<Trainer> compile(const FlowPtr& net, const std::vector<InputSpec>& inputs,
                                   LossSpec loss, OptimizerSpec optimizer,
                                   TrainOptions options = {},
                                   std::source_location where = std::source_location::current());

  /// One training step; returns the loss. `batch` holds the inputs then the target (the
  /// inputs alone for LossSpec::network_output()).
  StatusOr<double> step(const std::vector<Tensor>& batch);
  /// Starts copying the next step's `batch` to the device while the current step runs
  /// (#31's input overlap: the compiled step's ProgramExecutor::prefetch_input); the
  /// step() given the same tensors takes that copy. Nothing for an interpreted step.
  Status prefetch(const std::vector<Tensor>& batch);
  /// The network in eval mode (dropout off, batch-norm running statistics), sharing the
  /// parameters; `inputs` may have another batch size than training (compiled once per
  /// input types).
  StatusOr<std::vector<Tensor>> evaluate(const std::vector<Tensor>& inputs);

  /// The learning rate of the next steps (the optimizer's `lr` until changed; a
  /// schedule from training/schedule.h calls this every step or epoch). With parameter
  /// groups (OptimizerSpec::with_group) this is the default group's, and every group's
  /// lr becomes its own first lr scaled by the same factor, lr / OptimizerSpec::lr (as a
  /// PyTorch scheduler scales each group's initial lr; groups keep theirs when
  /// OptimizerSpec::lr is 0): one schedule drives every group. A rate that is not finite
  /// (NaN, inf) or negative is refused by the next step(), which then changes nothing
  /// (training/learning_rate.h; 0 is allowed).
  void set_lr(double lr);
  double lr() const { return lrs_[0]; }
  /// One group's learning rate, for a schedule of its own (set it after set_lr(double),
  /// which rescales every group). The group is named by its path; an error lists the
  /// groups when there is no such group, or refuses a rate that is not finite or negative.
  Status set_lr(const std::string& group, double lr);
  StatusOr<double> lr(const std::string& group) const;
  /// The momentum (SGD, RMSprop) or β1 (Adam, AdamW, RAdam) of the next steps, every
  /// group's, for a schedule that cycles it (LrSchedule::momentum_at: OneCycleLR,
  /// CyclicLR). Only for an optimizer built with OptimizerSpec::with_scheduled_momentum(),
  /// whose step takes it as its `weft.momentum` input; an error otherwise (the momentum is
  /// compiled into the step). It starts at OptimizerSpec::first_momentum().
  Status set_momentum(double momentum);
  double momentum() const { return momentum_; }
  /// The optimizer the step was compiled with.
  const OptimizerSpec& optimizer() const { return optimizer_; }
  /// Steps taken so far, one per step() call (restored by load()). With gradient
  /// accumulation (OptimizerSpec::accumulate_steps = K) a step is a micro-batch and the
  /// update is taken on every K-th.
  int64_t steps() const { return steps_; }
  /// Updates taken so far: steps() / accumulate_steps.
  int64_t updates() const { return steps_ / optimizer_.accumulate_steps; }

  /// Loss scaling (TrainOptions::loss_scale): the scale the next step multiplies the loss
  /// by, and the updates skipped so far for an inf or NaN gradient. Each reads one scalar
  /// back from the backend (the step itself never does); an error when loss scaling is
  /// off.
  StatusOr<double> loss_scale() const;
  StatusOr<int64_t> skipped_steps() const;
  /// Records `loss_scale` and `skipped_steps` as batch values of the metrics of those
  /// names (when asked: a training loop calls it where it logs); an error when loss
  /// scaling is off.
  Status record_loss_scale();

  /// TrainOptions::check_numerics for the following steps and evaluations.
  void set_check_numerics(bool on);

  /// Excludes the parameters under `path` from training (recompiles the step).
  Status freeze(const std::string& path);
  Status thaw(const std::string& path);

  /// Saves parameters, state, optimizer slots and the step count (safetensors),
  /// atomically. Data parallel: rank 0 alone writes; every other rank returns at once
  /// (collective::writes_checkpoints).
  Status save(const std::string& path) const;
  /// Loads a checkpoint (all, or one labelled subgraph: LoadOptions::subgraph, its
  /// structure checked unless LoadOptions::by_names_and_shapes); on error nothing changes. Strict unless `options.strict` is false: a checkpoint lacking an
  /// expected tensor or holding an unexpected one is refused, both listed.
  StatusOr<LoadReport> load(const std::string& path, const LoadOptions& options = {});

  const Model& model() const { return *model_; }
  const TrainOptions& options() const { return options_; }
  const Graph& step_graph() const { return step_; }
  /// The optimizer's state slots in the step graph (names and initializers; the AOT
  /// generator's parameter table lists them with the model's parameters), then, with
  /// TrainOptions::loss_scale, the loss scaler's state (LossScaler::state()).
  const std::vector<OptimizerSlot>& optimizer_slots() const { return slots_; }
  /// The compiled step on a compiled backend ("cpu", "cuda": its Program, describe(),
  /// fallbacks()); nullptr on the reference backend. Its profile is set_profiling's and
  /// profile_report's.
  ProgramExecutor* compiled_step() { return step_exec_.get(); }
  const ProgramExecutor* compiled_step() const { return step_exec_.get(); }
  /// Parameters, state and optimizer slots by name (read back from the backend).
  const std::map<std::string, Tensor>& values() const;
  /// How many derived step inputs (the weight copies, TrainOptions::weight_copies) were
  /// computed on the host from their f32 parameters so far: once per copy when the step
  /// is compiled and whenever the parameters change outside the step (set_value, load,
  /// freeze, thaw, reset_state), never per step — the step writes each copy itself, and
  /// every backend keeps it for the next step (training/derived_state.h).
  int64_t derived_refreshes() const { return derived_.refreshes(); }
  /// Replaces a value (a parameter loaded from elsewhere); its type must match.
  Status set_value(const std::string& name, Tensor value);
  /// Times every kernel of the compiled step from now on (on) or stops (off); an error
  /// naming the backend where it has no profiler (runtime/backend.h: cpu has one).
  Status set_profiling(bool on);
  /// The per-kernel table of the steps timed so far, its `top` most costly rows (0: the
  /// totals alone; runtime/cpu/executor.h's), or the error of set_profiling.
  StatusOr<std::string> profile_report(int top = kProfileRows) const;
  // ---- Metrics (training/monitor/metrics.h): every step records its loss as "loss".
  /// The run's metrics: batch values, epoch history and trend queries.
  monitor::Metrics& metrics() { return metrics_; }
  const monitor::Metrics& metrics() const { return metrics_; }
  /// A batch value of metric `name`.
  void record_scalar(const std::string& name, double value) { metrics_.record(name, value); }
  /// A batch value of a metric inside the graph tree: `path` is a label path, then a dot
  /// and the metric's own name (`encoder.scan.loss`); an error names a path that is not
  /// a labelled subgraph.
  Status record_at(const std::string& path, double value);
  /// From now on every step computes `statistic` of each tagged activation (Model::tags:
  /// `hidden`, `encoder.hidden`) inside the compiled step — only the scalar leaves it —
  /// and records it as metric `TAG.STATISTIC` (recompiles the step; called again, adds).
  /// An error names a tag the model does not have, or one that is not a float tensor.
  Status collect(const std::vector<std::string>& tags, Statistic statistic = Statistic::mean);
  /// Closes the epoch of every metric (monitor::Metrics::flush).
  Status flush() { return metrics_.flush(); }

  /// Zeroes the state that forward references carry from one step to the next (a tag
  /// read by uses(...) before it is defined: ParamInfo::carried), as before the first
  /// step. There is no detach_state(): that state is an input of each step, never
  /// differentiated, so gradients stop at every step boundary (truncated BPTT, one step
  /// long) without it.
  Status reset_state();

 private:
  Trainer() = default;
  /// Builds and (on a compiling backend) binds the training step: the named steps below,
  /// in order.
  Status build_step();
  /// The step's loss and the statistics collect() asked for, as the graph holds them.
  struct StepLoss {
    ValueId value = kNoValue;
    std::vector<ValueId> collected;
  };
  /// What the gradients and the optimizer added: the loss the step reports (averaged over
  /// the ranks) and the optimizer's (and loss scaler's) state slots.
  struct StepUpdate {
    ValueId loss_out = kNoValue;
    std::vector<OptimizerSlot> slots;
  };
  /// The network built for training, with freeze/thaw replayed.
  StatusOr<std::shared_ptr<Model>> build_model() const;
  /// The target input and the loss added to the forward `g`, its output checked against
  /// the loss; collect()'s statistics emitted; outputs set so that they stay computed.
  StatusOr<StepLoss> add_loss(Graph& g, const Model& model) const;
  /// The forward's passes before differentiation: canonicalize, fuse_attention, autocast,
  /// recompute_loops (`loss` follows the values they leave).
  Status run_forward_passes(Graph& g, StepLoss& loss) const;
  /// Loss scaling, the gradients of `wrt`, the optimizer's update and the weight copies.
  StatusOr<StepUpdate> add_update(Graph& g, const Model& model, const std::vector<ValueId>& wrt,
                                  ValueId loss_value, ValueId step) const;
  /// First values for what is new in values_: parameters and state, then `slots`.
  Status add_first_values(const Graph& g, const Model& model,
                          const std::vector<OptimizerSlot>& slots);
  /// `g` compiled into step_exec_, values pushed, and the step's inputs found.
  Status bind_step(const Graph& g);
  bool compiled() const;
  /// `g` compiled for the backend with options_ (the step's with the communicator when
  /// `step`).
  StatusOr<std::unique_ptr<ProgramExecutor>> compile_graph(const Graph& g, bool step) const;
  /// An error when check-numerics is on and the backend lacks it (set_check_numerics
  /// after compile() can turn it on).
  Status check_numerics_available() const;
  /// Copies the executor's parameters, state and slots into values_ when they are newer.
  void sync_values() const;
  /// A state value of the loss scaler by name, read alone from the step executor when it
  /// holds a newer one (sync_values reads them all); an error naming `what` (the accessor)
  /// when loss scaling is off.
  StatusOr<Tensor> loss_scale_state(const std::string& name, const char* what) const;
  /// Copies values_ into an executor's param and state inputs (derived ones refreshed).
  Status push_values(ProgramExecutor& ex) const;
  /// The parameters changed outside the step: the step's inputs follow them (pushed into
  /// a compiled step; the reference backend's kept copies forgotten).
  Status masters_changed();
  // ---- Data parallelism (training_data_parallel.cc) ----
  /// `options.communicator` checked against `target` (more than one rank needs a backend
  /// that runs several) and made the backend's (cuda: NCCL over it; Backend::
  /// communicator_for).
  static Status connect_ranks(const codegen::Target& target, TrainOptions& options);
  /// With a communicator: `loss` averaged over the ranks (an all_reduce mean op added to
  /// `g`), the loss step() reports; else `loss`.
  ValueId rank_mean_loss(Graph& g, ValueId loss) const;
  /// More than one rank: the large weight gradients of `g` computed as row blocks, each
  /// reduced on its own (split_gradient_bytes; passes/split_gradients.h).
  Status split_gradients(Graph& g) const;
  /// More than one rank: an error on every rank unless every rank compiled the same step.
  Status check_same_step_on_every_rank(const Graph& step) const;
  /// More than one rank: values_ made rank 0's, or an error when ranks loaded different
  /// checkpoints (collective::agree_on_parameters, with loaded_from_).
  Status agree_with_other_ranks();
  /// Emits collect()'s statistics into `g` (the training forward of `model`), returning
  /// them in collected_'s order.
  StatusOr<std::vector<ValueId>> emit_collected(Graph& g, const Model& model) const;
  /// Records the step's collected statistics (outputs 1.. of `outputs`).
  void record_collected(const std::function<double(size_t)>& output);
  /// The optimizer's parameter groups in `g` (params_and_grads by path, the default group
  /// first), each with its lr input added to `g`.
  StatusOr<std::vector<OptimizerGroup>> optimizer_groups(
      Graph& g, const Model& model, const std::vector<std::pair<ValueId, ValueId>>& pairs) const;

  const codegen::Target* target_ = nullptr;  ///< options_.backend's entry (codegen/targets.h).
  FlowPtr net_;
  std::vector<InputSpec> inputs_;
  /// The error of a step() batch of `got` tensors.
  Error batch_size_error(size_t got) const;
  LossSpec loss_;
  OptimizerSpec optimizer_;
  TrainOptions options_;
  std::shared_ptr<Model> model_;        ///< Training-mode forward, for the parameter table.
  Graph step_;
  std::vector<OptimizerSlot> slots_;
  mutable std::map<std::string, Tensor> values_;
  mutable bool values_stale_ = false;  ///< The step executor holds newer values.
  /// The step's derived inputs: refreshed into a compiled step's buffers by push_values,
  /// kept here between reference steps.
  mutable DerivedState derived_;
  std::string loaded_from_;  ///< The checkpoint load() read last; "" for seeded values.
  std::unique_ptr<ProgramExecutor> step_exec_;
  std::vector<int> batch_inputs_;  ///< step_exec_'s input index of each batch tensor.
  /// step_exec_'s input index of each group's lr (the default group first; -1 where a
  /// group has no trainable parameter) and of the step number.
  std::vector<int> lr_inputs_;
  int step_input_ = -1;
  int momentum_input_ = -1;  ///< step_exec_'s weft.momentum (scheduled momentum), or -1.
  std::map<std::string, Graph> eval_graphs_;  ///< By printed input types.
  std::map<std::string, std::unique_ptr<ProgramExecutor>> eval_execs_;
  std::vector<std::pair<bool, std::string>> freezes_;  ///< (freeze?, path), in call order.
  /// collect(): what each statistic output is (the step's outputs after the loss), in
  /// call order, and the metric it is recorded as (`TAG.STATISTIC`).
  struct Collected {
    std::string tag;
    Statistic statistic;
    std::string metric;
  };
  std::vector<Collected> collected_;
  monitor::Metrics metrics_;
  std::source_location where_;  ///< The compile() call: the loss's location.
  /// The lr of the default group, then of each OptimizerSpec::groups entry.
  std::vector<double> lrs_ = {1e-3};
  double momentum_ = 0;  ///< Fed to weft.momentum when the optimizer schedules it.
  int64_t steps_ = 0;
};

}  // namespace weft
