#pragma once
// What the tensor and indexing converters (ops/tensor.cc, ops/indexing.cc) share: an
// axis checked against a rank, i64 index arithmetic on `iota`, and slicing, padding and
// repeating that a converter builds from weft's movement ops.
#include <cstdint>
#include <vector>

#include "interop/onnx/convert.h"

namespace weft::onnx_io {

using Dims = std::vector<int64_t>;

/// `axis` in [-rank, rank) as a non-negative axis, or the node is invalid (naming `what`).
int axis_in(NodeContext& n, int64_t axis, int rank, const char* what = "axis");

/// `v` as an i64 scalar.
ValueId i64(Emitter& e, int64_t v);

/// 0, 1, ..., len-1 along `axis` of a tensor of `shape` (i64).
ValueId iota(Emitter& e, Dims shape, int axis);

/// x along `axis` at the 1-D i64 `indices`.
ValueId gather1(Emitter& e, ValueId x, int axis, ValueId indices);

/// x[start:stop:step] along `axis` (start, stop in [0, dim], step >= 1).
ValueId slice_axis(Emitter& e, ValueId x, int axis, int64_t start, int64_t stop,
                   int64_t step = 1);

/// x padded by `low` and `high` per axis with `value`; negative amounts crop (weft's
/// pad takes only amounts >= 0, so the crop is a slice).
ValueId pad_or_crop(Emitter& e, ValueId x, const Dims& low, const Dims& high, double value);

/// Each axis k of x repeated `times[k]` times, either as whole blocks (tile:
/// [a, b] -> [a, b, a, b]) or element by element (nearest upsampling: [a, a, b, b]).
ValueId repeat(Emitter& e, ValueId x, const Dims& times, bool blocks);

}  // namespace weft::onnx_io
