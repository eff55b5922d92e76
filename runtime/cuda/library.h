#pragma once
// Which device code runs each invocation of a Program on the GPU: the one decision that
// runtime/cuda's executor binds by, codegen/ refuses host fallbacks by
// (compile_cuda_program without allow_host_fallback) and `weftc check --backend=cuda`
// reports. Host-only (no CUDA headers), so machines without a GPU ask it too.
//
//   for (int i : host_invocations(program))       // the ops that would run on the host
//     std::cout << describe_host_invocation(program.code[i]) << "\n";
//
// Generated kernels (fused elementwise, reductions and row kernels, epilogues) always run
// on the device; a contraction's GEMM runs on cuBLAS when plan_matmul plans it. Library
// invocations map to one LibraryKind each (library_kind); `host` is the reference
// interpreter on the host, a debugging path.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/program.h"

namespace weft::cuda {

enum class LibraryKind {
  matmul,         ///< cuBLAS (plan.h).
  all_reduce,     ///< One process: a device-to-device copy.
  constant,       ///< No operands (full, iota): computed once at bind time.
  strided_copy,   ///< transpose, broadcast_to, slice, pad, concat (index_maps.h).
  gather,         ///< Index checked on the device.
  scatter_add,    ///< Atomic adds after a copy of the base.
  one_hot,
  cross_entropy,  ///< One warp per row; labels checked on the device.
  mse,            ///< Block partial sums, then one block: deterministic.
  elementwise,    ///< What the generated kernels lack: pow, f64 transcendental math.
  random,         ///< Philox on the device, the reference's streams (runtime/philox.h).
  convolution,    ///< cuDNN: conv and its two gradients.
  pooling,        ///< max/avg pooling, their gradients and max_pool2d_select.
  attention,      ///< attention's forward in f32 (attention_kernels.h; not yet run on a GPU).
  attention_grad, ///< attention_grad's dq, dk, dv in f32: FlashAttention-2's backward
                  ///< (attention_kernels.h; not yet run on a GPU). WEFT_ATTENTION_GRAD_KERNEL=0
                  ///< sends it to `host`, so the CUDA lowering decomposes it.
  host,           ///< The reference interpreter on the host (no CUDA kernel).
};

/// The A/B switch (runtime/ab_switch.h) that turns the attention_grad kernel off: set to
/// "0", library_kind gives `host` for every attention_grad node, so the CUDA lowering
/// decomposes it into primitives as before the kernel (the GPU check's baseline).
inline constexpr const char* kAttentionGradSwitch = "WEFT_ATTENTION_GRAD_KERNEL";

/// "matmul", "strided_copy", ..., "host".
const char* library_kind_name(LibraryKind kind);

/// How a library invocation of `node` on operands of `operands` types computing `result`
/// runs on the GPU. Never fails: what the device code does not cover is `host`.
LibraryKind library_kind(const Node& node, const std::vector<Type>& operands,
                         const Type& result);

/// Why library_kind(node, operands, result) is `host`: the CUDA backend's stated gaps, in
/// one place (nullopt exactly when the invocation runs on the device).
/// codegen:kernel_coverage_test holds every op × dtype a training step holds to a device
/// kernel or one of these reasons, and prints them.
std::optional<std::string_view> library_gap(const Node& node, const std::vector<Type>& operands,
                                            const Type& result);

/// The indices in program.code of the invocations that would run on the host: library
/// invocations of kind `host`, and contractions whose GEMM cuBLAS does not run.
std::vector<int> host_invocations(const Program& program);

/// "cross_entropy at model.cc:12:3 (%loss): f32[64,10], i64[64] -> f32[]": what a
/// host-fallback error or `weftc check` names for invocation `inv`.
std::string describe_host_invocation(const Invocation& inv);

/// Ok when every invocation of `program` runs on the device; otherwise the error naming
/// each op that would run on the host (describe_host_invocation), at the first one's
/// location, and the way out (allow_host_fallback). What the executor, compile_for_cuda
/// and `weftc check --backend=cuda` report.
Status check_device_only(const Program& program);

}  // namespace weft::cuda
