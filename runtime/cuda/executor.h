#pragma once
// The CUDA runtime: runs a Program (runtime/program.h) on one GPU, as runtime/cpu's
// Executor runs it on the host.
//
//   // ptx: one PTX module holding every generated kernel; symbols[k]: the entry of
//   // program.kernels[k] in it (both empty for a program without kernels).
//   if (!weft::cuda::available()) return weft::cuda::unavailable_reason();
//   StatusOr<std::unique_ptr<cuda::Executor>> ex =
//       cuda::Executor::create(program, ptx, symbols);
//   (*ex)->set_input("x", batch);        // host -> device, into the input's own buffer
//   Status s = (*ex)->run();             // one step on one stream, then the updates
//   (*ex)->prefetch_input(0, next);      // #31: next batch on the copy stream, meanwhile
//   (*ex)->set_input(0, next);           // takes that copy (an event wait, a D2D copy)
//   Tensor loss = (*ex)->output(0);      // device -> host
//
// Everything is decided in create(): the arena and the inputs block are two device
// allocations, zeroed (every input at its Program::input_offsets entry); the PTX module
// is loaded once through the CUDA runtime's library API (no driver-API link, so binaries
// start on machines without a driver); each invocation is bound to its device pointers:
//  - generated: its kernel, launched with one pointer per buffer (operands then results,
//    as GeneratedFn's buffers[]) on 256-thread blocks, at most 65535 of them; every
//    thread walks a grid-stride loop over the kernel's rows·row_length elements. Its
//    `clear` ranges are zeroed just before.
//  - contraction: the GEMM into C (results[gemm_result]), then its epilogue kernel on
//    C, operands[2...], and the other results (program.h).
//  - library: matmul in f32 and f64 through cuBLAS (pedantic math: no TF32 unless
//    ExecutorOptions::tf32, so results match the reference interpreter's f32), in f16
//    and bf16 through cublasGemmEx on tensor cores with f32 accumulation; conv and its
//    gradients through cuDNN (FMA math for f32 and f64, tensor cores for f16 and bf16;
//    the algorithm chosen at create()); pooling and its gradients on pool.cu's
//    kernels (the reference's results to the bit); all_reduce as one process (a copy
//    when the plan put operand and result apart); an op with no operands (full, iota), a
//    constant: computed once by the reference interpreter at create(), copied device to
//    device into its arena slot each step; any other op, the reference interpreter on the
//    host for that invocation (the stream is synchronized, the operands copied to the
//    host and the result back): correct but slow, counted in fallbacks().
//  - copy: a device-to-device copy.
//  - loop: its body bound once on an arena of its own (bind.cc), run `length` times on
//    the stream with the xs, ys and carries copied per iteration.
// run() enqueues every invocation on the executor's stream, then the updates (each
// `assign`'s value copied into its input buffer; values that are themselves inputs are
// snapshotted first, as on the CPU), and returns once the stream is synchronized.
//
// Errors: every failed CUDA or cuBLAS call is an Error naming the call and CUDA's
// message. Asynchronous kernel faults surface when run() synchronizes. input() and
// output() return a Tensor; a failed copy there (a device already faulted, which run()
// has reported) is an internal error.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/executor.h"
#include "runtime/cuda/conv_plan.h"
#include "runtime/cuda/step_schedule.h"
#include "runtime/program.h"
#include "runtime/tensor.h"

namespace weft::cuda {

/// True when a CUDA device can be used (cudaGetDeviceCount succeeds and is > 0). Any
/// error there means "no GPU" (without a GPU the runtime returns error 35).
bool available();

/// Why not (e.g. "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA
/// runtime version"), "" when available.
std::string unavailable_reason();

struct BodySite;  // device.h
class NcclCommunicator;  // nccl_communicator.h

struct ExecutorOptions {
  int device = 0;  ///< The CUDA device ordinal.
  /// The most bytes the arena and the inputs block may take together; 0: the device's
  /// free memory (cudaMemGetInfo). create() refuses a larger plan before allocating,
  /// naming its size and largest buffers.
  int64_t max_memory = 0;
  /// Capture the whole step (every invocation and the updates) as one CUDA graph at
  /// create() and replay it in run(). false: launch by launch (for comparison and
  /// debugging); a Program with host fallbacks always runs launch by launch.
  bool cuda_graph = true;
  /// Let invocations with no CUDA kernel run on the reference interpreter on the host (a
  /// debugging path: a stream synchronize and two copies each). Without it, create()
  /// refuses such a Program, naming each op and its line (library.h,
  /// check_device_only).
  bool allow_host_fallback = false;
  /// Which cuDNN algorithm each convolution takes (conv_plan.h, ConvPolicy): the fastest
  /// deterministic one by default (the same bits every step); `exact` keeps to the
  /// reference's arithmetic (no FFT or Winograd); `fastest` also takes nondeterministic
  /// ones, as PyTorch does by default.
  ConvPolicy convolutions = ConvPolicy::deterministic;
  /// TF32 tensor cores for f32 GEMMs and convolutions ([Mixed precision]'s `--tf32`,
  /// off by default): operands rounded to a 10-bit mantissa, accumulation in f32 —
  /// faster, and far outside the reference's f32 tolerance, hence opt-in. f16/bf16
  /// GEMMs and convolutions always run on tensor cores (f32 accumulation); f64 never.
  /// Before Ampere (no TF32 units; architecture.h, runs_tf32) f32 runs as without it.
  bool tf32 = false;
  /// Data parallelism on GPUs: the step's all_reduce invocations run through NCCL on its
  /// communication stream (nccl_communicator.h), bucketed; `device` must be its
  /// device(). nullptr: one process (all_reduce is a copy).
  std::shared_ptr<NcclCommunicator> nccl = nullptr;
  /// With NCCL, all_reduce invocations of one dtype and reduction share a bucket — one
  /// ncclAllReduce — of up to this many bytes (BindOptions', PyTorch DDP's 25 MiB).
  int64_t all_reduce_bucket_bytes = int64_t{25} << 20;
  /// The first bucket's limit (BindOptions', PyTorch DDP's 1 MiB): it closes early in the
  /// backward pass, so its reduction starts while the rest is computed.
  int64_t first_all_reduce_bucket_bytes = int64_t{1} << 20;
  /// Gradient accumulation with NCCL (OptimizerSpec::accumulate_steps = `steps` > 1):
  /// the step's accumulated gradients are reduced only on a window's last micro-batch.
  /// The step is then captured twice over one arena (step_schedule.h, StepVariant), and
  /// run() replays the variant that variant_of_step gives for the value last set into
  /// input `step_input` (the 1-based step number, an i64[]: weft.step). Ignored without
  /// NCCL, and for a step whose buckets have no predicate.
  struct Accumulation {
    int step_input = -1;
    int64_t steps = 1;
  } accumulation = {};
  /// #31's input overlap: prefetch_input copies the next batch from the host (the data
  /// Loader's pinned buffers) on a second stream, the copy stream, into one of two device
  /// slots of that input, while the current step runs on the step's stream; the
  /// set_input given the same tensor then enqueues on the step's stream a wait on that
  /// copy's event and a device-to-device copy from the slot into the input's own buffer.
  /// false (BindOptions::input_prefetch, $WEFT_INPUT_PREFETCH=0): prefetch_input copies
  /// nothing and set_input copies from the host on the step's stream, as before.
  bool input_prefetch = true;
};

class Executor : public ProgramExecutor {
 public:
  /// Binds `program` on the GPU. `ptx` is one PTX module (text) holding every generated
  /// kernel; `symbols[k]` is the entry name of program.kernels[k] in it (empty ptx and
  /// symbols when the program has no kernels). Errors: no usable device ("no CUDA device:
  /// " and unavailable_reason()), a plan larger than the memory limit, PTX that does not
  /// load or lacks a symbol, any failed CUDA or cuBLAS call.
  static StatusOr<std::unique_ptr<Executor>> create(Program program, std::string ptx,
                                                    std::vector<std::string> symbols,
                                                    ExecutorOptions options = {});
  ~Executor() override;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const Program& program() const override { return program_; }

  /// Copies `value` from the host into input `index`'s device buffer, ordered on the
  /// step's stream before the next run(). When `value` is the tensor (the same host bytes)
  /// of an earlier prefetch_input of this input not yet taken, it takes that copy instead:
  /// the step's stream waits on its event, then copies the slot into the input's buffer
  /// (device to device). Errors name the input and both types.
  Status set_input(int index, const Tensor& value) override;
  /// #31's input overlap (ExecutorOptions::input_prefetch): enqueues `value`'s copy into
  /// the next of input `index`'s two device slots (allocated by its first prefetch) on the
  /// copy stream, after the step that last read that slot, and records an event; returns
  /// at once. The copy overlaps whatever the step's stream runs: prefetch(n+1), then
  /// set_input(n) and run() for step n. The step's graph keeps reading the input's fixed
  /// buffer (one capture; the slot's copy into it is enqueued outside the graph, ahead of
  /// its launch) — one device-to-device copy per input and step instead of capturing a
  /// graph per slot. `value` must stay unchanged until the run() after the set_input that
  /// takes it returns; a prefetch no set_input took is waited for by the prefetch that
  /// reuses its slot and by the destructor. Only pinned memory (the Loader's buffers) is
  /// copied while the call returns at once: from pageable memory the runtime stages the
  /// bytes first, after the copy stream's earlier work, on the calling thread. Off:
  /// check_input only.
  Status prefetch_input(int index, const Tensor& value) override;
  using ProgramExecutor::set_input;  // By name.
  /// A host copy of input `index`'s current value (parameters after the last step's
  /// update).
  Tensor input(int index) const override;

  /// One step: every invocation in order on one stream, then the updates; returns after
  /// the stream is synchronized. On an error the updates are not applied. With
  /// accumulation (ExecutorOptions::accumulation), next_variant()'s capture.
  Status run() override;

  int num_outputs() const override { return static_cast<int>(program_.outputs.size()); }
  /// A host copy of output `index`.
  Tensor output(int index) const override;

  /// Invocations that run through the reference interpreter on the host (no CUDA kernel).
  int fallbacks() const override { return fallbacks_; }
  /// True when run() replays the step as one captured CUDA graph.
  bool uses_cuda_graph() const;
  /// The variant the next run() takes (ExecutorOptions::accumulation): accumulate when
  /// gradients are accumulated with NCCL and the step number set last is not the last
  /// micro-batch of its window; reduce otherwise.
  StepVariant next_variant() const;
  /// One step launch by launch with a CUDA event pair around each invocation (the
  /// updates are not timed): milliseconds per invocation, indexed like program().code.
  /// For finding the costly kernels; the step's results are those of run().
  StatusOr<std::vector<double>> profile_step();
  /// Device memory the executor allocated: the arena, the inputs block, the shared
  /// workspace (cuBLAS's and cuDNN's included), update snapshots, constants and the
  /// prefetched inputs' slots.
  int64_t device_bytes() const;
  /// One line per invocation: its index, kind and what it runs ("cublas sgemm 64x32x48",
  /// "generated k0 (4 blocks of 256)", "reference softmax (no CUDA kernel)").
  std::string describe() const override;

  struct Bound;   ///< A bound invocation (executor.cc).
  struct Device;  ///< The device, its stream, cuBLAS handle, module and memory (executor.cc).
  /// The device state (device.h), for tests that hold one of its streams.
  Device& device_state() { return *device_; }

 private:
  Executor();
  void* resolve(const BufferRef& ref) const;
  /// Enqueues the whole step: schedule_'s actions (every invocation on the stream, with
  /// NCCL the buckets' starts and waits), then the updates. `before` (when given) is
  /// called before each invocation and once after the last (profile_step's events).
  Status enqueue_step(const std::function<Status(size_t)>& before = nullptr,
                      StepVariant variant = StepVariant::reduce);
  Status apply_updates();
  Status capture_graph();
  /// `e` at invocation `i`: its location (when `e` has none) and which invocation.
  Error invocation_error(Error e, size_t i) const;

  Program program_;
  std::unique_ptr<Device> device_;
  std::vector<void*> input_ptr_;  ///< Device pointers, indexed like program_.inputs.
  std::vector<std::unique_ptr<Bound>> code_;
  /// The step's enqueue order (step_schedule.h): code_ in order, with NCCL the buckets'
  /// starts and waits among them.
  std::vector<StepAction> schedule_;
  /// StepVariant::accumulate's order, when gradients are accumulated with NCCL
  /// (ExecutorOptions::accumulation and a predicated bucket); else empty.
  std::vector<StepAction> accumulate_schedule_;
  ExecutorOptions::Accumulation accumulation_;
  int64_t next_step_ = 0;  ///< The step number last set into accumulation_.step_input.
  std::vector<void*> snapshots_;  ///< Device copies of update values that are inputs.
  /// The invocations inside loop bodies, for their device errors (device.h, BodySite).
  std::vector<BodySite> body_sites_;
  int fallbacks_ = 0;
};

}  // namespace weft::cuda
