#pragma once
// The backend registry: one place that maps a device's name ("cpu", "cuda") to how a
// Program is bound to that device as a ProgramExecutor (runtime/executor.h), and to what
// else the device offers. Each backend registers itself from its own folder
// (runtime/cpu/backend.cc, runtime/cuda/backend.cc: one `register_backend` call in an
// alwayslink cc_library, //runtime/cpu:backend, //runtime/cuda:backend), so a binary
// knows the backends it links and nothing else; a third device is a new folder and one
// registration, not edits across the tree.
//
//   // An AOT library links //runtime/cuda:backend; its generated table names "cuda".
//   StatusOr<const Backend*> b = find_backend("cuda");   // error lists the linked ones
//   DeviceCode code{.module = ptx, .symbols = symbols};  // cpu: .host_kernels
//   StatusOr<std::unique_ptr<ProgramExecutor>> ex = (*b)->bind(program, code, {});
//   // without a GPU: "no CUDA device: cudaGetDeviceCount: ..."
//
// Features that only some devices have (a host address for zero-copy input writes,
// check-numerics, per-kernel profiles, collectives over more than one rank) are entries of
// Backend: null where the device lacks them; has(Feature) says whether it has one that
// users ask for by a flag, and unsupported(Feature) gives the one message every caller
// reports for that case. Depends on runtime/ only: no codegen, no MLIR.
//
// What a new device provides, the AOT build included, is listed in runtime/README.md
// ("A new device").

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/collective/communicator.h"
#include "runtime/executor.h"
#include "runtime/program.h"

namespace weft {

/// The device code of a Program's generated kernels (Program::kernels), in one of the two
/// forms a backend loads: host function pointers (cpu: JIT-compiled, or an AOT object
/// file's), or one module of device code that the backend loads when it binds, with each
/// kernel's entry symbol (cuda: PTX text).
struct DeviceCode {
  std::vector<GeneratedFn> host_kernels;  ///< Host form: host_kernels[k] runs kernels[k].
  std::string module;                     ///< Module form: the module (cuda: PTX).
  std::vector<std::string> symbols;       ///< Module form: symbols[k] is kernels[k]'s entry.
};

/// The optional features a user asks for by a flag, which a backend has or lacks.
enum class Feature {
  check_numerics,  ///< "--check-numerics": Backend::set_check_numerics.
  profiler,        ///< "--profile": Backend::set_profiling and profile_report.
  multi_rank,      ///< "--data-parallel": Backend::multi_rank.
};

/// The flag by which users ask for `feature`: "--check-numerics", "--profile",
/// "--data-parallel".
const char* feature_flag(Feature feature);

/// The rows a profile report lists when the caller does not say (cpu::Executor's).
inline constexpr int kProfileRows = 25;

/// How to bind; what a backend cannot honour it refuses (bind's errors). The one struct
/// for what binding needs: every front end carries one as it is, not field by field —
/// codegen::CompileOptions::bind (the JIT targets, weftc), TrainOptions::bind (the
/// Trainer, the JIT examples), driver::ModelOptions::bind (the training binaries' flags)
/// and aot::CompiledModelOptions (an alias of it) — so a new bind-time option is a field
/// here and the backends' conversions (runtime/cpu/backend.h, runtime/cuda/backend.h).
struct BindOptions {
  int num_threads = 0;      ///< Host threads (cpu); 0: $WEFT_NUM_THREADS or every core.
  int64_t max_memory = 0;   ///< Arena + inputs limit; 0: the device's available memory.
  /// What runs the Program's all_reduce ops; nullptr: one process.
  std::shared_ptr<collective::Communicator> communicator = nullptr;
  int64_t all_reduce_bucket_bytes = int64_t{25} << 20;  ///< the cpu and cuda ExecutorOptions'.
  int64_t first_all_reduce_bucket_bytes = int64_t{1} << 20;  ///< the cpu and cuda ExecutorOptions'.
  /// cuda: f32 GEMMs and convolutions on TF32 tensor cores (cuda::ExecutorOptions::tf32,
  /// --tf32); the other backends ignore it.
  bool tf32 = false;
  /// Gradient accumulation's window (OptimizerSpec::accumulate_steps) and the name of the
  /// step's input holding the 1-based step number (weft.step): cuda with NCCL then
  /// reduces the accumulated gradients on a window's last micro-batch only
  /// (cuda::ExecutorOptions::accumulation). The cpu reads the step's own predicate and
  /// ignores them. Facts of the compiled step, not choices of the user: whoever binds a
  /// step sets them (the Trainer from its optimizer, CompiledModel from its table),
  /// whatever a front end's options held there.
  int64_t accumulate_steps = 1;
  std::string step_input = {};
  /// cuda: the next batch's copy to the device on a second stream while the current step
  /// runs (ProgramExecutor::prefetch_input, cuda::ExecutorOptions::input_prefetch; #31's
  /// input overlap); false, or $WEFT_INPUT_PREFETCH=0, copies each batch on the step's
  /// stream as it is set (for A/B). The cpu reads host memory as it is and ignores it.
  bool input_prefetch = true;
};

struct Backend {
  std::string name;     ///< "cpu", "cuda": what weft_library's `backend` names.
  /// Binds `program` with `code` on the device. Errors: the device is absent (cuda: "no
  /// CUDA device: ..."), an option it cannot honour, a plan too large for its memory.
  StatusOr<std::unique_ptr<ProgramExecutor>> (*bind)(Program program, DeviceCode code,
                                                      const BindOptions& options) = nullptr;
  /// Why the device cannot be used on this machine, "" when it can (nullptr: always).
  std::string (*unavailable_reason)() = nullptr;
  /// Ok when the device runs every invocation of `program` (nullptr: always); else the
  /// error naming the ops it would refuse (cuda: the host-only ops, library.h).
  Status (*check_program)(const Program& program) = nullptr;

  // ---- Optional features; each takes an executor this backend bound.
  /// The host address of input `index`'s buffer: a batch written there needs no copy.
  void* (*host_input_data)(ProgramExecutor& ex, int index) = nullptr;
  /// Stop at the first op producing a NaN or an infinity (cpu::Executor's).
  void (*set_check_numerics)(ProgramExecutor& ex, bool on) = nullptr;
  /// Per-invocation timing and its report, the `top` most costly rows (0: the totals
  /// alone; cpu::Executor's).
  void (*set_profiling)(ProgramExecutor& ex, bool on) = nullptr;
  std::string (*profile_report)(const ProgramExecutor& ex, int top) = nullptr;
  /// The device memory in use on this process's device, in MiB (cuda: cudaMemGetInfo's
  /// total - free), for the training monitor's dashboard.
  double (*device_memory_used_mib)() = nullptr;
  /// Page-locks (pins) the host memory [data, data + bytes), so that copies from it to
  /// the device go by DMA without staging (cuda: cudaHostRegister); unpin_host_memory
  /// undoes it, before the memory is freed. nullptr: the device reads host memory as it
  /// is (cpu). The data Loader pins its batch buffers through these (training/data).
  Status (*pin_host_memory)(void* data, int64_t bytes) = nullptr;
  void (*unpin_host_memory)(void* data) = nullptr;
  /// Collectives over more than one rank (a communicator with world_size() > 1).
  bool multi_rank = false;
  /// Data parallelism on a device that reduces with collectives of its own: the
  /// communicator its steps are bound with, made on every rank (collectively) from the
  /// launch's host communicator `host` (collective::world_from_environment's), on the
  /// device of `local_rank` (collective::local_rank()), giving up on a step's device
  /// collectives after `timeout` (--collective-timeout). cuda: NCCL
  /// (cuda::NcclCommunicator::create; an NCCL communicator is returned as it is).
  /// nullptr: the steps reduce with `host` itself (cpu). Call it through
  /// communicator_for.
  StatusOr<std::shared_ptr<collective::Communicator>> (*rank_communicator)(
      std::shared_ptr<collective::Communicator> host, int local_rank, std::chrono::milliseconds timeout) = nullptr;

  /// The communicator to bind this backend's steps with for the launch's `host`
  /// communicator (rank_communicator's, or `host` itself; nullptr for nullptr).
  /// Errors: rank_communicator's (cuda: "no CUDA device: ...", a local rank without its
  /// GPU, two ranks on one GPU, NCCL's failure).
  StatusOr<std::shared_ptr<collective::Communicator>> communicator_for(
      std::shared_ptr<collective::Communicator> host, int local_rank, std::chrono::milliseconds timeout) const;

  /// Whether it has `feature` (its hooks above are set).
  bool has(Feature feature) const;
  /// The error for a `feature` this backend lacks, named by its flag: "--profile is not
  /// available on the cuda backend, which this model was compiled for (backends in this
  /// binary that have it: cpu)".
  Error unsupported(Feature feature) const;
};

/// Adds `backend` (its name must be new). Called once per backend by a static
/// initializer in the backend's registration library; returns true for that purpose.
bool register_backend(Backend backend);

/// The backend named `name`, or an error naming the backends linked into this binary
/// (and that a backend is linked by its //runtime/NAME:backend library).
StatusOr<const Backend*> find_backend(const std::string& name);

/// The names of the linked backends, sorted.
std::vector<std::string> backend_names();

/// The communicator the training steps of backend `name` reduce with on this rank, from
/// the launch's `world` (collective::world_from_environment's): the backend's
/// communicator_for (cuda: NCCL on the GPU of `local_rank`), or `world` as it is when this
/// binary links no backend of that name (the reference interpreter, which runs one
/// process and says so; a driver test that links none). The one way the AOT driver's
/// --data-parallel and the data-parallel test programs (tests/data_parallel) join a
/// launch; errors are communicator_for's.
StatusOr<std::shared_ptr<collective::Communicator>> step_communicator(
    const std::string& name, std::shared_ptr<collective::Communicator> world, int local_rank,
    std::chrono::milliseconds timeout);

}  // namespace weft
