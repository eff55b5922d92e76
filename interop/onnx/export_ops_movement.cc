// Export rows of the movement ops (reshape, transpose, broadcast_to, slice, concat, pad,
// gather, one_hot, scatter_add) and the constants (full, iota): export_context.h.
#include <algorithm>
#include <string>
#include <vector>

#include "interop/onnx/export_context.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {
namespace export_ops_movement {  // this file's names, apart in the exporter's unity unit

void reshape(ExportContext& c) {
  const std::vector<int64_t>& dims = c.out_type().shape.dims;
  onnx::NodeProto& n = c.add("Reshape", {c.in(0), c.ints(dims)}, {c.out()});
  // Without allowzero, a 0 in the shape copies the input's dimension.
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) add_attr(n, "allowzero", int64_t{1});
}

void transpose(ExportContext& c) {
  add_attr(c.add("Transpose", {c.in(0)}, {c.out()}), "perm", c.node().ints_attr("perm"));
}

void broadcast_to(ExportContext& c) { c.add("Expand", {c.in(0), c.ints(c.out_type().shape.dims)}, {c.out()}); }

void slice(ExportContext& c) {
  const IntList& start = c.node().ints_attr("start");
  std::vector<int64_t> axes(start.size()), steps(start.size(), 1);
  for (size_t k = 0; k < axes.size(); ++k) axes[k] = static_cast<int64_t>(k);
  if (const IntList* s = optional_ints(c.node(), "step")) steps = *s;
  c.add("Slice", {c.in(0), c.ints(start), c.ints(c.node().ints_attr("stop")), c.ints(axes), c.ints(steps)},
        {c.out()});
}

void concat(ExportContext& c) {
  std::vector<std::string> inputs;
  for (int i = 0; i < c.num_operands(); ++i) inputs.push_back(c.in(i));
  add_attr(c.add("Concat", inputs, {c.out()}), "axis", c.node().int_attr("axis"));
}

void pad(ExportContext& c) {
  std::vector<int64_t> pads = c.node().ints_attr("low");
  const IntList& high = c.node().ints_attr("high");
  pads.insert(pads.end(), high.begin(), high.end());
  c.add("Pad", {c.in(0), c.ints(pads), c.scalar(c.node().float_attr("value"), c.in_type(0).dtype)},
        {c.out()});
}

void gather(ExportContext& c) {
  add_attr(c.add("Gather", {c.in(0), c.in(1)}, {c.out()}), "axis", c.node().int_attr("axis"));
}

// ONNX's OneHot counts negative indices from the end, weft's gives zeros: compare with
// iota instead, which is exact for every index.
void one_hot(ExportContext& c) {
  const int64_t depth = c.node().int_attr("depth");
  Tensor iota(Type{c.in_type(0).dtype, Shape({depth})});
  for (int64_t k = 0; k < depth; ++k) iota.set_double(k, static_cast<double>(k));
  std::string idx = c.add1("Unsqueeze", {c.in(0), c.ints({-1})});
  add_attr(c.add("Cast", {c.add1("Equal", {idx, c.constant(iota)})}, {c.out()}), "to",
           static_cast<int64_t>(onnx_elem_type(c.node().dtype_attr("dtype"))));
}

// scatter_add's 1-D indices, expanded to the updates' shape for ScatterElements.
void scatter_add(ExportContext& c) {
  const int64_t axis = c.node().int_attr("axis");
  const Shape& src = c.in_type(2).shape;
  const int a = static_cast<int>(axis < 0 ? axis + src.rank() : axis);
  std::vector<int64_t> along(static_cast<size_t>(src.rank()), 1);
  along[static_cast<size_t>(a)] = src[a];
  std::string idx = c.add1("Expand", {c.add1("Reshape", {c.in(1), c.ints(along)}), c.ints(src.dims)});
  onnx::NodeProto& n = c.add("ScatterElements", {c.in(0), idx, c.in(2)}, {c.out()});
  add_attr(n, "axis", axis);
  add_attr(n, "reduction", std::string("add"));
}

// ConstantOfShape makes no bf16 before opset 20: f32, rounded to bf16 as weft rounds.
void full(ExportContext& c) {
  const Type& t = c.out_type();
  const DType via = f32_for_bf16(t.dtype);
  Tensor value(Type{via, Shape({1})});
  value.set_double(0, c.node().float_attr("value"));
  const std::string y = c.out_via(via);
  add_attr(c.add("ConstantOfShape", {c.ints(t.shape.dims)}, {y}), "value", value);
  c.finish_via(y, via);
}

void iota(ExportContext& c) {
  const Type& t = c.out_type();
  int axis = static_cast<int>(c.node().int_attr("axis"));
  if (axis < 0) axis += t.shape.rank();
  Tensor v(t);
  const std::vector<int64_t> strides = t.shape.strides();
  for (int64_t i = 0; i < v.numel(); ++i) {
    v.set_double(i, static_cast<double>((i / strides[static_cast<size_t>(axis)]) % t.shape[axis]));
  }
  add_attr(c.add("Constant", {}, {c.out()}), "value", v);
}

const OpExporter kRows[] = {
    {Op::Reshape, nullptr, reshape},
    {Op::Transpose, nullptr, transpose},
    {Op::BroadcastTo, nullptr, broadcast_to},
    {Op::Slice, nullptr, slice},
    {Op::Concat, nullptr, concat},
    {Op::Pad, nullptr, pad},
    {Op::Gather, nullptr, gather},
    {Op::OneHot, nullptr, one_hot},
    {Op::ScatterAdd, nullptr, scatter_add},
    {Op::Full, nullptr, full},
    {Op::Iota, nullptr, iota},
};

}  // namespace export_ops_movement
}  // namespace

std::span<const OpExporter> movement_exporters() { return export_ops_movement::kRows; }

}  // namespace weft::onnx_io
