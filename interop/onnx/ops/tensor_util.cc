// The helpers that the tensor and indexing converters share (tensor_util.h).
#include "interop/onnx/ops/tensor_util.h"

#include <algorithm>
#include <string>

namespace weft::onnx_io {

int axis_in(NodeContext& n, int64_t axis, int rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    n.invalid(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
              std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

ValueId i64(Emitter& e, int64_t v) { return e.constant(static_cast<double>(v), DType::i64); }

ValueId iota(Emitter& e, Dims shape, int axis) {
  return e.op(Op::Iota, {}, {{"shape", shape}, {"axis", int64_t{axis}}, {"dtype", DType::i64}});
}

ValueId gather1(Emitter& e, ValueId x, int axis, ValueId indices) {
  return e.op(Op::Gather, {x, indices}, {{"axis", int64_t{axis}}});
}

ValueId slice_axis(Emitter& e, ValueId x, int axis, int64_t start, int64_t stop, int64_t step) {
  const int rank = e.rank(x);
  Dims starts(rank, 0), stops = e.shape(x).dims, steps(rank, 1);
  starts[axis] = start;
  stops[axis] = stop;
  steps[axis] = step;
  return e.op(Op::Slice, {x}, {{"start", starts}, {"stop", stops}, {"step", steps}});
}

ValueId pad_or_crop(Emitter& e, ValueId x, const Dims& low, const Dims& high, double value) {
  const Dims d = e.shape(x).dims;
  Dims start(d.size()), stop(d.size()), grow_low(d.size()), grow_high(d.size());
  bool crops = false, grows = false;
  for (size_t k = 0; k < d.size(); ++k) {
    start[k] = std::min<int64_t>(-std::min<int64_t>(low[k], 0), d[k]);
    stop[k] = std::max(start[k], d[k] + std::min<int64_t>(high[k], 0));
    grow_low[k] = std::max<int64_t>(low[k], 0);
    grow_high[k] = std::max<int64_t>(high[k], 0);
    crops = crops || low[k] < 0 || high[k] < 0;
    grows = grows || low[k] > 0 || high[k] > 0;
  }
  if (crops) x = e.op(Op::Slice, {x}, {{"start", start}, {"stop", stop}});
  if (grows) x = e.op(Op::Pad, {x}, {{"low", grow_low}, {"high", grow_high}, {"value", value}});
  return x;
}

ValueId repeat(Emitter& e, ValueId x, const Dims& times, bool blocks) {
  const Dims d = e.shape(x).dims;
  Dims split, wide, out;
  for (size_t k = 0; k < d.size(); ++k) {
    const Dims one = blocks ? Dims{1, d[k]} : Dims{d[k], 1};
    const Dims many = blocks ? Dims{times[k], d[k]} : Dims{d[k], times[k]};
    split.insert(split.end(), one.begin(), one.end());
    wide.insert(wide.end(), many.begin(), many.end());
    out.push_back(d[k] * times[k]);
  }
  ValueId y = e.op(Op::BroadcastTo, {e.reshape(x, split)}, {{"shape", wide}});
  return e.reshape(y, out);
}

}  // namespace weft::onnx_io
