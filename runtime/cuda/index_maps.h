#pragma once
// What the CUDA library kernels (library_kernels.cu) and the host share: their argument
// structs and the per-element index arithmetic, compiled by nvcc for the device and by
// the host compiler for the host. The plans are made on the host (library_plan.h), and
// library_plan_test runs the same per-element functions over host buffers against the
// reference interpreter, so CI checks the kernels' index arithmetic without a GPU.
//
// A StridedMap is one movement op as "output element -> input element": for the
// coordinate i of the output box (dims), the element is taken from the input when
// lo[d] <= i[d] < hi[d] on every axis, at in_base + sum((i[d] - lo[d]) * in_strides[d]),
// and written at out_base + sum(i[d] * out_strides[d]); outside, the fill value is
// written. transpose permutes the strides, broadcast_to sets them to 0, slice folds its
// start into in_base and its step into the strides, pad sets lo/hi, and concat is one map
// per operand, each writing its own box of the output (out_base along the axis).

#include <cstdint>

#include "ir/host_device.h"

namespace weft::cuda {

inline constexpr int kMaxRank = 8;

/// What a kernel found wrong with its data (an index or label out of range), written
/// once per step by the first kernel that finds an error. code 0: none.
struct DeviceError {
  int32_t code = 0;        ///< DeviceErrorCode.
  int32_t invocation = -1; ///< The invocation's index in the Program.
  int64_t value = 0;       ///< The offending index or label.
  int64_t position = 0;    ///< Its position in the index operand.
};

enum DeviceErrorCode : int32_t { kNoError = 0, kIndexOutOfRange = 1, kLabelOutOfRange = 2 };

struct StridedMap {
  int rank = 0;
  int64_t count = 0;  ///< Elements in the output box: the product of dims.
  int64_t dims[kMaxRank] = {};
  int64_t out_strides[kMaxRank] = {};
  int64_t in_strides[kMaxRank] = {};
  int64_t lo[kMaxRank] = {};
  int64_t hi[kMaxRank] = {};
  int64_t out_base = 0;
  int64_t in_base = 0;
};

/// For element `e` of the box: its output index, and its input index or -1 (fill).
WEFT_HD inline int64_t map_element(const StridedMap& m, int64_t e, int64_t& out_index) {
  int64_t in = m.in_base, out = m.out_base;
  bool inside = true;
  for (int d = m.rank - 1; d >= 0; --d) {
    const int64_t i = e % m.dims[d];
    e /= m.dims[d];
    out += i * m.out_strides[d];
    if (i < m.lo[d] || i >= m.hi[d]) inside = false;
    in += (i - m.lo[d]) * m.in_strides[d];
  }
  out_index = out;
  return inside ? in : -1;
}

/// gather along an axis: x viewed as [outer, dim, inner], idx of n entries, the result
/// [outer, n, inner]. scatter_add has the same geometry (src is [outer, n, inner], the
/// result [outer, dim, inner]).
struct GatherGeometry {
  int64_t outer = 1, dim = 1, n = 0, inner = 1;
};

/// For element `e` of the gathered side ([outer, n, inner]): the position j in idx, and
/// the index of the element on the other side once idx[j] = `i` is known.
WEFT_HD inline int64_t gather_position(const GatherGeometry& g, int64_t e) {
  return (e / g.inner) % g.n;
}
WEFT_HD inline int64_t gather_other(const GatherGeometry& g, int64_t e, int64_t i) {
  const int64_t k = e % g.inner;
  const int64_t o = e / (g.inner * g.n);
  return (o * g.dim + i) * g.inner + k;
}

/// A warp lane's share of one row of `c` elements of `esize` bytes (4 or 8) at `address`,
/// read 16 bytes at a time (cross_entropy_rows): a head of scalar elements up to the
/// row's first 16-byte boundary (rows of odd length start anywhere), lane l taking head
/// element l; then the vectors of 16 / esize elements, lane l taking vectors l, l + 32,
/// ...; then a scalar tail, lane l taking its elements l, l + 32, .... Calls `scalar(j)`
/// for each of the lane's elements j read alone and `vector(j)` for each vector starting
/// at element j (16-byte aligned).
template <typename Scalar, typename Vector>
WEFT_HD void lane_share(uintptr_t address, int64_t c, int64_t esize, int lane, Scalar&& scalar,
                        Vector&& vector) {
  const int64_t width = 16 / esize;
  const int64_t off = static_cast<int64_t>(address % 16);
  int64_t head = off == 0 ? 0 : (16 - off) / esize;
  if (head > c) head = c;
  const int64_t units = (c - head) / width;
  if (lane < head) scalar(lane);
  for (int64_t u = lane; u < units; u += 32) vector(head + u * width);
  for (int64_t j = head + units * width + lane; j < c; j += 32) scalar(j);
}

/// The dtypes of index operands, and the integer value of element i.
enum IndexType : int32_t { kIndexI32 = 0, kIndexI64 = 1, kIndexU8 = 2 };

WEFT_HD inline int64_t index_at(const void* p, IndexType t, int64_t i) {
  switch (t) {
    case kIndexI32: return static_cast<const int32_t*>(p)[i];
    case kIndexI64: return static_cast<const int64_t*>(p)[i];
    default: return static_cast<const uint8_t*>(p)[i];
  }
}

/// The value types of the kernels that compute (scatter_add, elementwise, random).
enum ValueType : int32_t { kF32 = 0, kF64 = 1, kI32 = 2, kI64 = 3 };

/// An elementwise op the generated kernels lack, with its operands broadcast: the result
/// is contiguous, operand k's element for output e is at map_element(operands[k], e).
enum ElementwiseOp : int32_t {
  kPow, kExp, kLog, kLog1p, kTanh, kSin, kCos, kErf, kSigmoid,
};

}  // namespace weft::cuda
