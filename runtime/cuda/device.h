#pragma once
// What the files of the CUDA executor share (internal to runtime/cuda): CUDA and cuBLAS
// return codes as weft Statuses, the executor's device state, and the bound invocations
// (bound.cc) that create() builds and run() walks.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "runtime/collective/bucket_plan.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/epilogue_match.h"
#include "runtime/cuda/executor_prefetch.h"
#include "runtime/cuda/index_maps.h"
#include "runtime/cuda/library.h"
#include "runtime/cuda/plan.h"
#include "runtime/loop_slots.h"

namespace weft::cuda {

/// Ok, or the error "`call`: `cudaGetErrorString(error)`", the thread's last error
/// cleared (so a later launch check does not report it again).
Status cuda_status(cudaError_t error, const std::string& call);

/// cudaMalloc of at least one byte, zeroed; errors name `what` and the size.
Status device_allocate(void*& p, int64_t bytes, const std::string& what);

/// Ok, or the error "`call`: `cublasGetStatusString(status)`".
Status cublas_status(cublasStatus_t status, const std::string& call);

/// The CUDA data type of a tensor-core GEMM's f32, f16 or bf16 elements (gemm.cc's
/// cublasGemmEx calls and gemm_lt.cc's cuBLASLt layouts and bias).
cudaDataType_t gemm_data_type(DType dtype);

/// Enqueues `plan`'s cuBLAS calls (or, for an empty contraction, zeroes `c_bytes` of C) on
/// the stream `cublas` is bound to: C = op(A)·op(B) in `dtype` (f32, f64, f16, bf16) with
/// `plan.math` (plan.h). gemm.cc.
Status run_matmul(cublasHandle_t cublas, cudaStream_t stream, const MatmulPlan& plan,
                  DType dtype, const void* a, const void* b, void* c, size_t c_bytes);

/// One input's prefetched copies (ExecutorOptions::input_prefetch; executor_prefetch.cc):
/// two device slots, their events, and which host bytes each holds (executor_prefetch.h).
struct PrefetchSlots {
  void* slot[2] = {};
  cudaEvent_t copied[2] = {};  ///< Recorded on the copy stream after the host -> slot copy.
  cudaEvent_t read[2] = {};    ///< Recorded on the step's stream after the slot -> input copy.
  PrefetchRing ring;
};

/// The device an executor runs on and everything it owns there; the destructor waits for
/// its streams and releases it all.
struct Executor::Device {
  int ordinal = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;  ///< On `stream`, in pedantic math mode.
  /// Created beside `cublas` only with WEFT_CUBLASLT_EPILOGUE=1 (#31, opt-in until measured
  /// on a GPU): contractions whose epilogue cuBLASLt can apply run as one cublasLtMatmul
  /// (epilogue_match.h, gemm_lt.cc); null otherwise.
  cublasLtHandle_t cublaslt = nullptr;
  /// On `stream`; created by the first convolution_bound (conv.cc), so programs without
  /// convolutions never pay for cudnnCreate (which loads cuDNN's engine libraries).
  cudnnHandle_t cudnn = nullptr;
  ConvPolicy convolutions = ConvPolicy::deterministic;  ///< ExecutorOptions::convolutions.
  bool tf32 = false;  ///< ExecutorOptions::tf32, where the device has TF32 units (runs_tf32).
  cudaLibrary_t library = nullptr;  ///< The program's PTX module.
  void* arena = nullptr;
  void* inputs = nullptr;     ///< The inputs block.
  void* snapshots = nullptr;  ///< Update values that are inputs, copied before updating.
  size_t snapshot_bytes = 0;
  /// One block every bound invocation uses as its workspace (cuDNN's, a two-pass
  /// reduction's partial results), sized to the largest Bound::workspace_bytes() after
  /// binding: invocations run one at a time on one stream, so they share it.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  /// Errors found by kernels (an index or label out of range): pinned host memory mapped
  /// into the device (`device_error` is its device address), read after the step's
  /// synchronize, cleared before each step.
  DeviceError* error = nullptr;
  DeviceError* device_error = nullptr;
  cudaGraph_t graph = nullptr;          ///< The captured step (ExecutorOptions::cuda_graph).
  cudaGraphExec_t graph_exec = nullptr;
  /// The step's StepVariant::accumulate, captured beside it over the same arena when
  /// gradients are accumulated with NCCL (ExecutorOptions::accumulation); else null.
  cudaGraph_t accumulate_graph = nullptr;
  cudaGraphExec_t accumulate_graph_exec = nullptr;
  /// Data parallelism (ExecutorOptions::nccl; null: one process): the step's buckets
  /// (runtime/collective/bucket_plan.h), their staging block, and per bucket the event
  /// recorded on `stream` after its last member was staged and the one recorded on the
  /// communication stream once its results are written (step_schedule.h; nccl_step.cc).
  std::shared_ptr<NcclCommunicator> nccl;
  collective::BucketPlan buckets;
  void* staging = nullptr;
  std::vector<std::vector<void*>> bucket_results;  ///< Each member's result, set when bound.
  std::vector<cudaEvent_t> staged;
  std::vector<cudaEvent_t> reduced;
  /// #31's input overlap (ExecutorOptions::input_prefetch; null: off): the stream the
  /// prefetched inputs are copied on, and their slots (indexed like the program's inputs;
  /// an input never prefetched has none allocated).
  cudaStream_t copy_stream = nullptr;
  std::vector<PrefetchSlots> prefetched;
  size_t prefetch_bytes = 0;  ///< The slots' device memory.

  ~Device();
};

/// Set_input's half of #31's input overlap (executor_prefetch.cc): when input `index` has
/// a prefetched copy of `value` (the same host bytes) not yet taken, the step's stream
/// waits on its event and copies its slot into `to` (the input's buffer), and the result
/// is true; false when `value` was not prefetched (the caller copies it from the host).
/// `what` names the input in errors.
StatusOr<bool> take_prefetched(Executor::Device& d, int index, const Tensor& value, void* to,
                               const std::string& what);

/// One invocation bound to its device pointers.
struct Executor::Bound {
  virtual ~Bound() = default;
  /// Enqueues the invocation on `device.stream` (a host fallback synchronizes it first).
  /// Kernels that check their data report through device.device_error with `index`,
  /// this invocation's place in the Program.
  virtual Status run(Device& device, int index) = 0;
  virtual std::string describe() const = 0;
  /// Bytes of Device::workspace the invocation uses while it runs.
  virtual size_t workspace_bytes() const { return 0; }
  /// Device memory the invocation allocated for itself (a constant's value).
  virtual size_t owned_bytes() const { return 0; }
  /// True when run() synchronizes with the host (the reference fallback): such a step
  /// cannot be captured as a CUDA graph.
  virtual bool on_host() const { return false; }
  /// The user error for what this invocation's kernel wrote into Device::error (the
  /// same message as the CPU backend's for the same data).
  virtual Error device_error(const DeviceError& e) const;
};

using BoundPtr = std::unique_ptr<Executor::Bound>;
using ClearRanges = std::vector<std::pair<void*, size_t>>;

/// A generated kernel: `kernel` over `buffers` (operands then results), after zeroing
/// `clear`.
BoundPtr generated_bound(cudaKernel_t kernel, const GeneratedKernel& k, std::vector<void*> buffers,
                         ClearRanges clear);

/// A matmul through cuBLAS.
BoundPtr matmul_bound(MatmulPlan plan, DType dtype, const void* a, const void* b, void* c,
                      size_t c_bytes);

/// A contraction (its GEMM planned as `plan`, operands `a`, `b` and `bias`, C at `c`) as one
/// cublasLtMatmul applying `epilogue` (gemm_lt.cc), with the algorithm cuBLASLt's
/// heuristic picks now for these pointers' alignments and the workspace block; null when
/// it offers none (the caller binds the GEMM and its epilogue kernel instead).
StatusOr<BoundPtr> lt_contraction_bound(Executor::Device& d, const MatmulPlan& plan, DType dtype,
                                        LtEpilogue epilogue, const void* a, const void* b,
                                        const void* bias, void* c);

/// `node` on the reference interpreter on the host: operands `in` of `operand_types`
/// copied to the host, the result copied back into `out`.
BoundPtr fallback_bound(const Node& node, std::vector<Type> operand_types, const Type& result,
                        std::vector<const void*> in, void* out);

/// A GEMM with a generated epilogue: C = `node`(A, B) through cuBLAS when `plan` is
/// given, else on the reference interpreter; then `kernel` over `buffers` (C first).
BoundPtr contraction_bound(const Node& node, std::optional<MatmulPlan> plan, const Type& a_type,
                           const Type& b_type, const Type& c_type, const void* a, const void* b,
                           void* c, cudaKernel_t kernel, const GeneratedKernel& k,
                           std::vector<void*> buffers);

/// An invocation with no operands (full, iota): its value never changes, so the reference
/// interpreter computes it once, here, into a device buffer of its own, and each step
/// copies it into `out` (an arena slot other values use in between). Errors: the
/// reference's, or a failed allocation or copy.
StatusOr<BoundPtr> constant_bound(const Node& node, const Type& result, void* out);

/// A library invocation of `kind` (strided_copy, gather, scatter_add, one_hot,
/// cross_entropy, elementwise, random) on weft's CUDA kernels (library_bound.cc).
StatusOr<BoundPtr> library_bound(LibraryKind kind, const Node& node,
                                 const std::vector<Type>& types, const Type& result,
                                 std::vector<const void*> in, void* out);

/// An attention_grad invocation (LibraryKind::attention_grad) on FlashAttention-2's
/// backward (attention_kernels.h): `in` q, k, v, y, dy[, mask], `results` dq, dk, dv. Its
/// L and D rows live in the executor's shared workspace (workspace_bytes(), sized before
/// the step is captured), so nothing is allocated while the step runs.
StatusOr<BoundPtr> attention_grad_bound(const Node& node, const std::vector<Type>& types,
                                        std::vector<const void*> in, std::vector<void*> results);

/// `bytes` from `from` to `to`, device to device (nothing when they are the same bytes);
/// `what` names it in describe() and errors ("copy").
BoundPtr copy_bound(const void* from, void* to, size_t bytes, std::string what);

/// Arena bytes no live value occupies while an invocation runs (runtime/binding.h,
/// arena_free_runs), which it may use as workspace.
struct FreeArena {
  void* at = nullptr;
  size_t bytes = 0;
};

/// A conv, conv_backward_input or conv_backward_weight through cuDNN (conv.cc): the
/// plan (conv_plan.h), descriptors and algorithm made here, d.cudnn created on d.stream
/// if need be. The algorithm's workspace lies in `free` when it fits (no device memory
/// added), else in Device::workspace. Errors: the plan's (library_kind says `host` for
/// those), a failed cuDNN call, no FMA-math algorithm.
StatusOr<BoundPtr> convolution_bound(Executor::Device& d, const Node& node,
                                     const std::vector<Type>& operand_types, const Type& result,
                                     std::vector<const void*> in, void* out, FreeArena free);

/// A pooling op on pool.cu's kernels (pool.cc). Errors: the plan's (conv_plan.h).
StatusOr<BoundPtr> pooling_bound(const Node& node, const std::vector<Type>& operand_types,
                                 const Type& result, std::vector<const void*> in, void* out);

/// The buckets of `program`'s all_reduce invocations for d.nccl (sizes in `options`, the
/// bucket plan shared with the cpu executor), their staging block and events (nccl_step.cc).
Status plan_collectives(Executor::Device& d, const Program& program,
                        const collective::BucketPlanOptions& options);

/// Root invocation `index`, an all_reduce of `in` into `out`: without NCCL a one-process
/// copy; a bucket member copies its operand into its staging slice; any other is reduced
/// alone through NCCL, in place on `out`, before the next invocation (nccl_step.cc).
/// Error: an all_reduce inside a loop body with NCCL (`index` < 0).
StatusOr<BoundPtr> all_reduce_bound(Executor::Device& d, int index, const Invocation& inv, const void* in,
                                    void* out);

/// Bucket `k` reduced on the communication stream once its members are staged, its
/// results written there (step_schedule.h, start_bucket; with `unpredicated_only`, its
/// unpredicated prefix alone: start_bucket_unpredicated); and the compute stream made to
/// wait for that (wait_bucket).
Status start_bucket(Executor::Device& d, size_t k, bool unpredicated_only);
Status wait_bucket(Executor::Device& d, size_t k);

/// An invocation inside a loop's body, for the device errors its kernels report: body
/// invocations run with indices past the root Program's invocations (Binder::sites).
struct BodySite {
  size_t root = 0;                             ///< The outermost loop's invocation.
  const Executor::Bound* bound = nullptr;      ///< The body invocation, bound.
  Location loc;                                ///< Its node's location.
};

/// Binds Program code to device buffers: the executor's Program (bind.cc), and through
/// its loops each body, recursively.
struct Binder {
  Binder(Executor::Device& device, const Program& program, const std::vector<cudaKernel_t>& loaded)
      : d(device), root(program), kernels(loaded) {}

  Executor::Device& d;
  const Program& root;                      ///< Its kernels and bodies (bodies share them).
  const std::vector<cudaKernel_t>& kernels; ///< root.kernels, loaded.
  int fallbacks = 0;                        ///< Invocations bound to run on the host.
  std::vector<BodySite> sites;              ///< Run index root.code.size() + k is sites[k].
  size_t current_root = 0;

  /// `program`'s invocations bound to `arena` and `inputs` (one pointer per input), then
  /// `patches` (a loop body's slot, runtime/loop_slots.h). `body_index`: null for the
  /// root (invocation i runs with index i); for a loop body, receives the index each
  /// invocation runs with (a new entry of `sites`).
  StatusOr<std::vector<BoundPtr>> bind(const Program& program, void* arena,
                                       const std::vector<void*>& inputs,
                                       std::vector<int>* body_index,
                                       const std::vector<SlotPatch>& patches = {});
};

/// A loop invocation (bind.cc): its body (binder.root.bodies[inv.body]) bound once per
/// slot as runtime/loop_slots.h plans it (or once, past its bound), on an arena and
/// inputs block of its own; `in` and `results` are the loop's buffers.
StatusOr<BoundPtr> bind_loop(Binder& binder, const Invocation& inv, std::vector<const void*> in,
                             std::vector<void*> results);

}  // namespace weft::cuda
