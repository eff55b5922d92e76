#pragma once
// Library kernels of the CPU runtime: hand-written (and library-backed: oneDNN) kernels
// for the ops that are not generated through MLIR — contractions, convolutions, pooling,
// reductions, movement, creation and the composites. A Program invocation that names an
// op becomes one `BoundKernel`: the kernel is chosen, its loop bounds, strides and
// library descriptors are worked out, and its buffer pointers fixed, once, when the
// Program is loaded. `run` then does no allocation, no hashing and no graph walking.
//
//   LibraryCall call;
//   call.node.op = Op::Matmul;
//   call.operand_types = {{DType::f32, {128, 784}}, {DType::f32, {784, 256}}};
//   call.result_type = {DType::f32, {128, 256}};
//   auto k = make_library_kernel(call, {x, w}, y);     // StatusOr<unique_ptr<BoundKernel>>
//   if (k.ok() && *k) (*k)->run(pool);                 // y = x·w on the pool's threads
//
// Every kernel computes what the reference interpreter computes for the same node
// (runtime/reference/interpreter.h defines the semantics), within a per-dtype tolerance
// (summation order may differ; for a fixed thread count results are bitwise
// reproducible). Parallel loops go through the one `ThreadPool` passed to `run`; library
// calls (oneDNN) are made from inside the pool's chunks with the library limited to one
// thread each, so there is never a second pool competing for the cores.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/cpu/thread_pool.h"
#include "runtime/program.h"

namespace weft::cpu {

/// What one library invocation computes: the op and its attributes (in `node`; its
/// operand and result ids are meaningless here, `node.loc` is where errors point), the
/// operand types in order and the result type. Attributes are read with node.attr(...)
/// so schema defaults apply.
struct LibraryCall {
  Node node;
  std::vector<Type> operand_types;
  Type result_type;
};

/// A kernel with its buffers bound. Buffers are row-major and contiguous, 64-byte
/// aligned when they start an allocation (arena offsets are multiples of 64), and the
/// result never overlaps an operand unless the op is elementwise.
class BoundKernel {
 public:
  virtual ~BoundKernel() = default;
  /// Computes the result. Errors are the reference interpreter's messages for the same
  /// condition (a gather index out of range, a label outside [0, C)), at node.loc.
  virtual Status run(ThreadPool& pool) = 0;
  /// A short description for Program dumps and profiles, e.g. "onednn sgemm 128x256x784".
  virtual std::string describe() const = 0;

  /// Bytes of scratch the kernel needs while it runs (im2col columns, blocked layouts,
  /// library scratchpads, per-thread partial sums): nothing in it outlives run(), so the
  /// Executor gives every kernel the same block — invocations run one at a time — sized to
  /// the largest need, instead of each kernel holding its own for the program's life.
  virtual int64_t scratch_bytes() const { return 0; }
  /// Hands the kernel its scratch: a 64-byte aligned block of at least scratch_bytes(),
  /// before the first run(). A kernel never given one allocates its own on its first
  /// run() (kernels bound outside an Executor: tests, benchmarks).
  void set_scratch(std::byte* scratch) {
    scratch_given_ = true;
    bind_scratch(scratch);
  }

 protected:
  /// Points the kernel's scratch buffers into `scratch` (see set_scratch).
  virtual void bind_scratch(std::byte* /*scratch*/) {}
  /// For run(): binds a scratch block of the kernel's own unless one was given.
  void ensure_scratch();

 private:
  bool scratch_given_ = false;
  std::unique_ptr<std::byte[], void (*)(std::byte*)> own_scratch_{nullptr, nullptr};
};

/// The library kernel for `call`, bound to `operands` (in order) and `result`, or nullptr
/// when this op/dtype combination has no CPU library kernel (the runtime then runs the
/// reference kernel for that invocation). Errors: attributes the kernel cannot accept.
StatusOr<std::unique_ptr<BoundKernel>> make_library_kernel(const LibraryCall& call,
                                                           std::vector<const void*> operands,
                                                           void* result);

/// Why the CPU has no library kernel for well-typed `call` (its op and operand/result
/// dtypes), so that make_library_kernel returns nullptr and the executor runs the
/// reference interpreter for it; nullopt when a kernel exists. The CPU backend's stated
/// gaps, in one place: codegen:kernel_coverage_test holds every op × dtype a training step
/// holds (f32, f64, i32, i64, u8, bool) to a kernel or one of these reasons, and checks
/// that this answer agrees with make_library_kernel (runtime/cpu:half_test does the same
/// for f16 and bf16). A call with f16 or bf16 operands that computes (not movement or
/// creation) has a gap exactly when its f32 counterpart does: bf16 matmuls and
/// convolutions run natively on AVX512_BF16, everything else through f32 (half.cc). all_reduce and assign never reach
/// make_library_kernel (the executor runs them itself), so nothing is said of them.
std::optional<std::string_view> cpu_library_gap(const LibraryCall& call);

/// A contraction with a generated epilogue (a `fused` node of kind "contraction"): the
/// GEMM of `gemm` (a matmul call: op, transposes, operand and result types) computes C
/// into `c`, and the epilogue `epilogue` — a GeneratedFn over `buffers` (C first, then
/// its other operands, then its results), `rows` rows of `row_length` elements in C's
/// element order — runs on each block of C's rows right after that block's GEMM, on the
/// same thread (runtime/cpu/gemm_epilogue.cc). nullptr when supports_gemm_epilogue is
/// false. `name` names the epilogue in describe().
StatusOr<std::unique_ptr<BoundKernel>> make_gemm_epilogue_kernel(
    const LibraryCall& gemm, const void* a, const void* b, void* c, GeneratedFn epilogue,
    std::vector<void*> buffers, int64_t rows, int64_t row_length, std::string name);

/// Whether make_gemm_epilogue_kernel runs `gemm`: an f32, f64, f16 or bf16 matmul (2-D or
/// batched, any transposes) whose result has its operands' dtype. (A half one runs the
/// matmul kernel, then the epilogue over C, which may widen it to f32 and round back:
/// passes/fuse_contraction_epilogue.h.)
bool supports_gemm_epilogue(const LibraryCall& gemm);

}  // namespace weft::cpu
