// Export rows of the contractions and windows (matmul, conv, conv_backward_input as
// ConvTranspose, pools) and the composites (softmax, layer_norm, cross_entropy, mse):
// export_context.h.
#include <algorithm>
#include <string>
#include <vector>

#include "interop/onnx/export_context.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {
namespace export_ops_nn {  // this file's names, apart in the exporter's unity unit

// Matrices with a transpose flag become Gemm (transA, transB), as PyTorch writes Linear;
// other ranks transpose the flagged operand's last two dims before MatMul.
void matmul(ExportContext& c) {
  if (c.in_type(0).dtype == DType::u8) c.refuse("ONNX's MatMul and Gemm take no u8 (weft's wraps modulo 256)");
  const bool ta = c.node().bool_attr("transpose_a"), tb = c.node().bool_attr("transpose_b");
  if ((ta || tb) && c.in_type(0).shape.rank() == 2 && c.in_type(1).shape.rank() == 2) {
    onnx::NodeProto& n = c.add("Gemm", {c.in(0), c.in(1)}, {c.out()});
    add_attr(n, "transA", int64_t{ta});
    add_attr(n, "transB", int64_t{tb});
    return;
  }
  std::string ab[2];
  for (int i = 0; i < 2; ++i) {
    ab[i] = c.in(i);
    if (!(i == 0 ? ta : tb)) continue;
    const int r = c.in_type(i).shape.rank();
    if (r < 2) c.refuse("a transposed operand must have rank 2 or more");
    std::vector<int64_t> perm(static_cast<size_t>(r));
    for (int k = 0; k < r; ++k) perm[static_cast<size_t>(k)] = k;
    std::swap(perm[static_cast<size_t>(r - 2)], perm[static_cast<size_t>(r - 1)]);
    onnx::NodeProto& t = c.add("Transpose", {ab[i]}, {c.fresh()});
    add_attr(t, "perm", perm);
    ab[i] = t.output(0);
  }
  c.add("MatMul", {ab[0], ab[1]}, {c.out()});
}

/// The attribute, or `n` copies of `dflt` when absent.
std::vector<int64_t> per_dim(const Node& node, std::string_view name, size_t n, int64_t dflt) {
  const IntList* v = optional_ints(node, name);
  return v ? *v : std::vector<int64_t>(n, dflt);
}

/// weft's symmetric padding as ONNX's begins then ends.
std::vector<int64_t> both_ends(std::vector<int64_t> p) {
  const size_t n = p.size();
  for (size_t k = 0; k < n; ++k) p.push_back(p[k]);
  return p;
}

void conv(ExportContext& c) {
  const std::vector<int64_t>& w = c.in_type(1).shape.dims;
  const size_t n = w.size() - 2;
  const DType via = f32_for_bf16(c.in_type(0).dtype);
  const std::string y = c.out_via(via);
  onnx::NodeProto& node = c.add("Conv", {c.in_as(0, via), c.in_as(1, via)}, {y});
  add_attr(node, "kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
  add_attr(node, "strides", per_dim(c.node(), "stride", n, 1));
  add_attr(node, "pads", both_ends(per_dim(c.node(), "padding", n, 0)));
  add_attr(node, "dilations", per_dim(c.node(), "dilation", n, 1));
  add_attr(node, "group", c.node().int_attr("groups"));
  c.finish_via(y, via);
}

// conv_backward_input(gy, w) is the transposed convolution (what ConvTranspose2d builds):
// ONNX's ConvTranspose, whose weight [C_in, C_out/groups, *k] is w as it is; the output
// padding makes its result input_shape.
void conv_transpose(ExportContext& c) {
  const std::vector<int64_t>& w = c.in_type(1).shape.dims;
  const Shape& gy = c.in_type(0).shape;
  const Shape& y = c.out_type().shape;
  const size_t n = w.size() - 2;
  const std::vector<int64_t> strides = per_dim(c.node(), "stride", n, 1), pads = per_dim(c.node(), "padding", n, 0),
                             dilations = per_dim(c.node(), "dilation", n, 1);
  std::vector<int64_t> out_pad(n);
  for (size_t k = 0; k < n; ++k) {
    const int d = static_cast<int>(k) + 2;
    out_pad[k] = y[d] - (strides[k] * (gy[d] - 1) + (w[k + 2] - 1) * dilations[k] + 1 - 2 * pads[k]);
    if (out_pad[k] < 0 || out_pad[k] >= std::max(strides[k], dilations[k])) {
      c.refuse("input_shape " + y.to_string() + " is not a ConvTranspose output size");
    }
  }
  const DType via = f32_for_bf16(c.in_type(0).dtype);
  const std::string result = c.out_via(via);
  onnx::NodeProto& node = c.add("ConvTranspose", {c.in_as(0, via), c.in_as(1, via)}, {result});
  add_attr(node, "kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
  add_attr(node, "strides", strides);
  add_attr(node, "pads", both_ends(pads));
  add_attr(node, "dilations", dilations);
  add_attr(node, "group", c.node().int_attr("groups"));
  add_attr(node, "output_padding", out_pad);
  c.finish_via(result, via);
}

// Floor mode; average pooling counts the padding (count_include_pad), as weft's does.
// ONNX's pools take f16, f32 and f64 (MaxPool also u8): bf16 is pooled in f32 and i32 in
// f64, both exactly as weft pools them; i64 is refused.
void pool(ExportContext& c) {
  const IntList& kernel = c.node().ints_attr("kernel");
  const DType dt = c.in_type(0).dtype;
  const bool native = dt != DType::bf16 && (is_floating(dt) || (dt == DType::u8 && c.node().op == Op::MaxPool2d));
  if (!native && dt != DType::i32 && dt != DType::bf16) {
    c.refuse("ONNX pools " + std::string(dtype_name(dt)) + " tensors only through a float type, inexactly");
  }
  const DType via = native ? dt : dt == DType::bf16 ? DType::f32 : DType::f64;
  const std::string y = c.out_via(via);
  onnx::NodeProto& node = c.add(c.row().onnx_op, {c.in_as(0, via)}, {y});
  add_attr(node, "kernel_shape", kernel);
  const IntList* stride = optional_ints(c.node(), "stride");
  add_attr(node, "strides", stride ? *stride : kernel);
  add_attr(node, "pads", both_ends(c.node().ints_attr("padding")));
  if (c.node().op == Op::AvgPool2d) add_attr(node, "count_include_pad", int64_t{1});
  c.finish_via(y, via);
}

void softmax(ExportContext& c) {
  add_attr(c.add(c.row().onnx_op, {c.in(0)}, {c.out()}), "axis", c.node().int_attr("axis"));
}

void layer_norm(ExportContext& c) {
  const int r = c.in_type(0).shape.rank();
  std::vector<int64_t> axes = c.node().ints_attr("axes");
  for (int64_t& a : axes) a = a < 0 ? a + r : a;
  std::sort(axes.begin(), axes.end());
  const int64_t first = r - static_cast<int64_t>(axes.size());
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] != first + static_cast<int64_t>(k)) {
      c.refuse("LayerNormalization normalizes the trailing axes; these axes are not trailing");
    }
  }
  onnx::NodeProto& n = c.add("LayerNormalization", {c.in(0), c.in(1), c.in(2)}, {c.out()});
  add_attr(n, "axis", first);
  add_attr(n, "epsilon", static_cast<float>(c.node().float_attr("eps")));
  // The statistics in f32 (weft's f16 and bf16 compute in f32), f64 for f64.
  const DType dt = c.in_type(0).dtype;
  add_attr(n, "stash_type", static_cast<int64_t>(onnx_elem_type(dt == DType::f64 ? DType::f64 : DType::f32)));
}

void cross_entropy(ExportContext& c) {
  add_attr(c.add("SoftmaxCrossEntropyLoss", {c.in(0), c.in(1)}, {c.out()}), "reduction",
           c.node().str_attr("reduction"));
}

// (a - b)², reduced; halves in f32, rounded once.
void mse(ExportContext& c) {
  const DType via = f32_for_halves(c.in_type(0).dtype);
  const std::string d = c.add1("Sub", {c.in_as(0, via), c.in_as(1, via)});
  const std::string& reduction = c.node().str_attr("reduction");
  const std::string y = c.out_via(via);
  if (reduction == "none") {
    c.add("Mul", {d, d}, {y});
  } else if (reduction == "mean" || reduction == "sum") {
    add_attr(c.add(reduction == "mean" ? "ReduceMean" : "ReduceSum", {c.add1("Mul", {d, d})}, {y}), "keepdims",
             int64_t{0});
  } else {
    c.refuse("unknown reduction \"" + reduction + "\"");
  }
  c.finish_via(y, via);
}

const OpExporter kRows[] = {
    {Op::Matmul, nullptr, matmul},
    {Op::Conv, nullptr, conv},
    {Op::ConvBackwardInput, nullptr, conv_transpose},
    {Op::MaxPool2d, "MaxPool", pool},
    {Op::AvgPool2d, "AveragePool", pool},
    {Op::Softmax, "Softmax", softmax},
    {Op::LogSoftmax, "LogSoftmax", softmax},
    {Op::LayerNorm, nullptr, layer_norm},
    {Op::CrossEntropy, nullptr, cross_entropy},
    {Op::Mse, nullptr, mse},
};

}  // namespace export_ops_nn
}  // namespace

std::span<const OpExporter> nn_exporters() { return export_ops_nn::kRows; }

}  // namespace weft::onnx_io
