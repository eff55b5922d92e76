#pragma once
// The CUDA library kernels (library_kernels.cu, compiled by nvcc): what runs the library
// invocations that are neither cuBLAS nor generated kernels (library.h's LibraryKind).
// Each function enqueues its kernels on `stream` and returns the launch's error; none
// synchronizes or allocates, so a step that uses them can be captured as a CUDA graph.
// Kernels that check their data (gather and scatter_add indices, cross_entropy labels)
// record the first error they find in `error` with `invocation` (index_maps.h).

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/cuda/index_maps.h"

namespace weft::cuda {

/// out[map's output index] = in[map's input index], or the `esize`-byte `fill` outside.
cudaError_t launch_strided_copy(const void* in, void* out, const StridedMap& map, int esize,
                                uint64_t fill, cudaStream_t stream);

/// out[o, j, k] = x[o, idx[j], k] (esize-byte elements).
cudaError_t launch_gather(const void* x, const void* idx, IndexType idx_type, void* out,
                          const GatherGeometry& g, int esize, DeviceError* error,
                          int invocation, cudaStream_t stream);

/// out[o, idx[j], k] += src[o, j, k], atomically (out already holds the base).
cudaError_t launch_scatter_add(const void* idx, IndexType idx_type, const void* src, void* out,
                               const GatherGeometry& g, ValueType type, DeviceError* error,
                               int invocation, cudaStream_t stream);

/// out (n × depth elements of esize bytes, zeroed here first): `one` at [j, idx[j]] for
/// the indices in [0, depth).
cudaError_t launch_one_hot(const void* idx, IndexType idx_type, int64_t n, int64_t depth,
                           void* out, int esize, uint64_t one, cudaStream_t stream);

/// Cross-entropy of logits [n, c] (f32 or f64) with labels [n]: mode 0 mean, 1 sum,
/// 2 none (out [n]). One warp per row, accumulated in f64 like the reference; the mean
/// and sum add the rows' losses (kept in `row_loss`, n doubles of workspace) in a fixed
/// order.
cudaError_t launch_cross_entropy(const void* logits, ValueType type, const void* labels,
                                 IndexType label_type, int64_t n, int64_t c, int mode,
                                 double* row_loss, void* out, DeviceError* error,
                                 int invocation, cudaStream_t stream);

/// The squared error of a and b (count elements, f32 or f64): mode 0 mean, 1 sum, 2 none
/// (out has count elements). Accumulated in f64 like the reference, in kMseBlocks block
/// partial sums (`partial`, kMseBlocks doubles of workspace) added in a fixed order.
inline constexpr int kMseBlocks = 1024;
cudaError_t launch_mse(const void* a, const void* b, ValueType type, int64_t count, int mode,
                       double* partial, void* out, cudaStream_t stream);

/// out[e] = op(a[a_map(e)], b[b_map(e)]) for e < count (b: nullptr for unary ops).
cudaError_t launch_elementwise(ElementwiseOp op, ValueType type, const void* a,
                               const StridedMap& a_map, const void* b, const StridedMap& b_map,
                               void* out, int64_t count, cudaStream_t stream);

/// random_uniform (f32, f64) or, with `bernoulli`, random_bernoulli {p}: `one` or 0 of
/// esize bytes. The key (seed, offset) is read on the device from `key` (i64[2]).
cudaError_t launch_random(bool bernoulli, ValueType type, const int64_t* key, void* out,
                          int64_t count, double p, int esize, uint64_t one,
                          cudaStream_t stream);

}  // namespace weft::cuda
