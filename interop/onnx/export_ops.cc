// The export table: one row per weft op saying how it becomes ONNX (opset 17) nodes, and
// the ops that have no ONNX form with the reason. Semantics on both sides:
// runtime/reference/interpreter.h and ONNX's schemas (onnx/defs/*/defs.cc).
#include <algorithm>
#include <string>
#include <vector>

#include "interop/onnx/export_context.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {

const IntList* ints_attr_or_null(const Node& n, std::string_view name) {
  const Attribute* a = n.attr(name);
  return a ? &std::get<IntList>(*a) : nullptr;
}

// ---- Elementwise.

/// A one-to-one mapping: the row's ONNX op on the operands, in order.
void direct(ExportContext& c) {
  std::vector<std::string> inputs;
  for (int i = 0; i < c.num_operands(); ++i) inputs.push_back(c.in(i));
  c.add(c.row().onnx_op, inputs, {c.out()});
}

void ne(ExportContext& c) { c.add("Not", {c.add1("Equal", {c.in(0), c.in(1)})}, {c.out()}); }

/// Operand i as dtype `to` (a Cast node), or as it is when it has that dtype.
std::string cast_in(ExportContext& c, int i, DType to) {
  if (c.in_type(i).dtype == to) return c.in(i);
  onnx::NodeProto& n = c.add("Cast", {c.in(i)}, {c.fresh()});
  add_attr(n, "to", static_cast<int64_t>(onnx_elem_type(to)));
  return n.output(0);
}

// ONNX's orderings take numbers only: bools compare as u8 (false < true), as weft's do.
void ordering(ExportContext& c) {
  const DType dt = c.in_type(0).dtype == DType::boolean ? DType::u8 : c.in_type(0).dtype;
  c.add(c.row().onnx_op, {cast_in(c, 0, dt), cast_in(c, 1, dt)}, {c.out()});
}

void log1p(ExportContext& c) {
  c.add("Log", {c.add1("Add", {c.in(0), c.scalar(1.0, c.in_type(0).dtype)})}, {c.out()});
}

void rsqrt(ExportContext& c) { c.add("Reciprocal", {c.add1("Sqrt", {c.in(0)})}, {c.out()}); }

// The reference's formulas, in its order of operations (opset 17 has no Gelu).
void gelu(ExportContext& c) {
  const DType dt = c.in_type(0).dtype;
  const std::string x = c.in(0);
  const std::string& mode = c.node().str_attr("approximate");
  std::string inner;
  if (mode == "tanh") {
    std::string cube = c.add1("Mul", {c.add1("Mul", {c.scalar(0.044715, dt), x}), x});
    cube = c.add1("Mul", {cube, x});
    inner = c.add1("Tanh", {c.add1("Mul", {c.scalar(0.79788456080286535587989211986876, dt),
                                           c.add1("Add", {x, cube})})});
  } else if (mode == "none") {
    inner = c.add1("Erf", {c.add1("Mul", {x, c.scalar(0.70710678118654752440084436210485, dt)})});
  } else {
    c.refuse("approximate must be \"none\" or \"tanh\", not \"" + mode + "\"");
  }
  c.add("Mul", {c.add1("Mul", {c.scalar(0.5, dt), x}), c.add1("Add", {c.scalar(1.0, dt), inner})},
        {c.out()});
}

// ONNX's Floor takes floats only; an integer is its own floor.
void floor(ExportContext& c) {
  c.add(is_floating(c.in_type(0).dtype) ? "Floor" : "Identity", {c.in(0)}, {c.out()});
}

void cast(ExportContext& c) {
  add_attr(c.add("Cast", {c.in(0)}, {c.out()}), "to",
           static_cast<int64_t>(onnx_elem_type(c.node().dtype_attr("dtype"))));
}

// ---- Reductions.

void reduce(ExportContext& c) {
  const IntList* axes = ints_attr_or_null(c.node(), "axes");
  if (axes && axes->empty()) {  // Reduces nothing; ONNX would read [] as all axes.
    c.add("Identity", {c.in(0)}, {c.out()});
    return;
  }
  // ReduceSum takes its axes as an input from opset 13, the others from opset 18.
  const bool axes_input = c.node().op == Op::Sum;
  std::vector<std::string> inputs = {c.in(0)};
  if (axes && axes_input) inputs.push_back(c.ints(*axes));
  onnx::NodeProto& n = c.add(c.row().onnx_op, inputs, {c.out()});
  if (axes && !axes_input) add_attr(n, "axes", *axes);
  add_attr(n, "keepdims", int64_t{c.node().bool_attr("keepdims")});
}

void argmax(ExportContext& c) {
  onnx::NodeProto& n = c.add("ArgMax", {c.in(0)}, {c.out()});
  add_attr(n, "axis", c.node().int_attr("axis"));
  add_attr(n, "keepdims", int64_t{c.node().bool_attr("keepdims")});
}

// ---- Movement.

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
  if (const IntList* s = ints_attr_or_null(c.node(), "step")) steps = *s;
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

// ---- Contractions and windows.

// Matrices with a transpose flag become Gemm (transA, transB), as PyTorch writes Linear;
// other ranks transpose the flagged operand's last two dims before MatMul.
void matmul(ExportContext& c) {
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
  const IntList* v = ints_attr_or_null(node, name);
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
  onnx::NodeProto& node = c.add("Conv", {c.in(0), c.in(1)}, {c.out()});
  add_attr(node, "kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
  add_attr(node, "strides", per_dim(c.node(), "stride", n, 1));
  add_attr(node, "pads", both_ends(per_dim(c.node(), "padding", n, 0)));
  add_attr(node, "dilations", per_dim(c.node(), "dilation", n, 1));
  add_attr(node, "group", c.node().int_attr("groups"));
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
  onnx::NodeProto& node = c.add("ConvTranspose", {c.in(0), c.in(1)}, {c.out()});
  add_attr(node, "kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
  add_attr(node, "strides", strides);
  add_attr(node, "pads", both_ends(pads));
  add_attr(node, "dilations", dilations);
  add_attr(node, "group", c.node().int_attr("groups"));
  add_attr(node, "output_padding", out_pad);
}

// Floor mode; average pooling counts the padding (count_include_pad), as weft's does.
// ONNX's pools take floats (MaxPool also 8-bit integers): i32 is pooled in f64, exactly.
void pool(ExportContext& c) {
  const IntList& kernel = c.node().ints_attr("kernel");
  const DType dt = c.in_type(0).dtype;
  const bool native = is_floating(dt) || (dt == DType::u8 && c.node().op == Op::MaxPool2d);
  if (!native && dt != DType::i32) c.refuse("ONNX pools " + std::string(dtype_name(dt)) + " tensors only through a float type, inexactly");
  const std::string y = native ? c.out() : c.fresh();
  onnx::NodeProto& node = c.add(c.row().onnx_op, {native ? c.in(0) : cast_in(c, 0, DType::f64)}, {y});
  add_attr(node, "kernel_shape", kernel);
  const IntList* stride = ints_attr_or_null(c.node(), "stride");
  add_attr(node, "strides", stride ? *stride : kernel);
  add_attr(node, "pads", both_ends(c.node().ints_attr("padding")));
  if (c.node().op == Op::AvgPool2d) add_attr(node, "count_include_pad", int64_t{1});
  if (!native) add_attr(c.add("Cast", {y}, {c.out()}), "to", static_cast<int64_t>(onnx_elem_type(dt)));
}

// ---- Creation: constants.

void full(ExportContext& c) {
  const Type& t = c.out_type();
  Tensor value(Type{t.dtype, Shape({1})});
  value.set_double(0, c.node().float_attr("value"));
  add_attr(c.add("ConstantOfShape", {c.ints(t.shape.dims)}, {c.out()}), "value", value);
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
  c.add("Identity", {c.constant(v)}, {c.out()});
}

// ---- Composites.

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
}

void cross_entropy(ExportContext& c) {
  add_attr(c.add("SoftmaxCrossEntropyLoss", {c.in(0), c.in(1)}, {c.out()}), "reduction",
           c.node().str_attr("reduction"));
}

void mse(ExportContext& c) {
  std::string d = c.add1("Sub", {c.in(0), c.in(1)});
  const std::string& reduction = c.node().str_attr("reduction");
  if (reduction == "none") {
    c.add("Mul", {d, d}, {c.out()});
    return;
  }
  if (reduction != "mean" && reduction != "sum") c.refuse("unknown reduction \"" + reduction + "\"");
  onnx::NodeProto& n = c.add(reduction == "mean" ? "ReduceMean" : "ReduceSum",
                             {c.add1("Mul", {d, d})}, {c.out()});
  add_attr(n, "keepdims", int64_t{0});
}

// ---- Bodies.

// The body's nodes in place of the node, on its operands.
void fused(ExportContext& c) {
  const Graph& body = *c.node().body;
  GraphWriter inner(body, c.writer().out(), c.writer().names());
  for (int i = 0; i < c.num_operands(); ++i) inner.bind(body.inputs()[static_cast<size_t>(i)].value, c.in(i));
  inner.write_nodes();
  for (size_t i = 0; i < c.node().results.size(); ++i) {
    c.alias(static_cast<int>(i), inner.name_of(body.outputs()[i]));
  }
}

// weft's scan as ONNX's Scan: the carries are its state, the xs its scan inputs; the
// body reads the consts from the outer scope.
void scan(ExportContext& c) {
  const Node& node = c.node();
  if (node.int_attr("stop") >= 0) c.refuse("an early exit ('stop') has no exact ONNX Scan form");
  if (node.int_attr("active") >= 0) c.refuse("skipped iterations ('active') have no exact ONNX Scan form");
  const int consts = static_cast<int>(node.int_attr("consts"));
  const int carries = static_cast<int>(node.int_attr("carries"));
  const int xs = c.num_operands() - consts - carries;
  if (xs == 0) c.refuse("a loop with no xs has no ONNX Scan form (Scan's length comes from its inputs)");
  std::vector<std::string> inputs, outputs;
  for (int i = consts; i < c.num_operands(); ++i) inputs.push_back(c.in(i));
  for (size_t i = 0; i < node.results.size(); ++i) outputs.push_back(c.out(static_cast<int>(i)));
  onnx::NodeProto& s = c.add("Scan", inputs, outputs);
  add_attr(s, "num_scan_inputs", int64_t{xs});
  if (node.bool_attr("reverse")) {
    add_attr(s, "scan_input_directions", std::vector<int64_t>(static_cast<size_t>(xs), 1));
    add_attr(s, "scan_output_directions",
             std::vector<int64_t>(node.results.size() - static_cast<size_t>(carries), 1));
  }
  const Graph& body = *node.body;
  onnx::GraphProto* g = add_graph_attr(s, "body");
  g->set_name(c.fresh("scan_body"));
  GraphWriter inner(body, g, c.writer().names());
  for (int i = 0; i < c.num_operands(); ++i) {
    const ValueId v = body.inputs()[static_cast<size_t>(i)].value;
    if (i < consts) {
      inner.bind(v, c.in(i));
    } else {
      set_value_info(g->add_input(), inner.name_of(v), body.type(v));
    }
  }
  inner.write_nodes();
  inner.write_outputs(body.outputs());
}

// ---- The table.

const OpExporter kExporters[] = {
    {Op::Neg, "Neg", direct},
    {Op::Abs, "Abs", direct},
    {Op::Exp, "Exp", direct},
    {Op::Log, "Log", direct},
    {Op::Log1p, nullptr, log1p},
    {Op::Sqrt, "Sqrt", direct},
    {Op::Rsqrt, nullptr, rsqrt},
    {Op::Tanh, "Tanh", direct},
    {Op::Sigmoid, "Sigmoid", direct},
    {Op::Relu, "Relu", direct},
    {Op::Sin, "Sin", direct},
    {Op::Cos, "Cos", direct},
    {Op::Erf, "Erf", direct},
    {Op::Sign, "Sign", direct},
    {Op::Floor, nullptr, floor},
    {Op::Not, "Not", direct},
    {Op::Gelu, nullptr, gelu},
    {Op::Softplus, "Softplus", direct},
    {Op::Cast, nullptr, cast},
    {Op::Add, "Add", direct},
    {Op::Sub, "Sub", direct},
    {Op::Mul, "Mul", direct},
    {Op::Div, "Div", direct},
    {Op::Pow, "Pow", direct},
    {Op::Maximum, "Max", direct},
    {Op::Minimum, "Min", direct},
    {Op::Eq, "Equal", direct},
    {Op::Ne, nullptr, ne},
    {Op::Lt, "Less", ordering},
    {Op::Le, "LessOrEqual", ordering},
    {Op::Gt, "Greater", ordering},
    {Op::Ge, "GreaterOrEqual", ordering},
    {Op::And, "And", direct},
    {Op::Or, "Or", direct},
    {Op::Select, "Where", direct},
    {Op::Sum, "ReduceSum", reduce},
    {Op::Mean, "ReduceMean", reduce},
    {Op::Max, "ReduceMax", reduce},
    {Op::Min, "ReduceMin", reduce},
    {Op::Argmax, nullptr, argmax},
    {Op::Reshape, nullptr, reshape},
    {Op::Transpose, nullptr, transpose},
    {Op::BroadcastTo, nullptr, broadcast_to},
    {Op::Slice, nullptr, slice},
    {Op::Concat, nullptr, concat},
    {Op::Pad, nullptr, pad},
    {Op::Gather, nullptr, gather},
    {Op::OneHot, nullptr, one_hot},
    {Op::ScatterAdd, nullptr, scatter_add},
    {Op::Matmul, nullptr, matmul},
    {Op::Conv, nullptr, conv},
    {Op::ConvBackwardInput, nullptr, conv_transpose},
    {Op::MaxPool2d, "MaxPool", pool},
    {Op::AvgPool2d, "AveragePool", pool},
    {Op::Full, nullptr, full},
    {Op::Iota, nullptr, iota},
    {Op::Softmax, "Softmax", softmax},
    {Op::LogSoftmax, "LogSoftmax", softmax},
    {Op::LayerNorm, nullptr, layer_norm},
    {Op::CrossEntropy, nullptr, cross_entropy},
    {Op::Mse, nullptr, mse},
    {Op::Fused, nullptr, fused},
    {Op::Scan, nullptr, scan},
};

constexpr const char* kGradient = "a gradient op has no ONNX form; export the forward graph";

const NoOnnxForm kRefused[] = {
    {Op::ConvBackwardWeight, kGradient},
    {Op::MaxPool2dBackward, kGradient},
    {Op::AvgPool2dBackward, kGradient},
    {Op::MaxPool2dSelect, kGradient},
    {Op::RandomUniform,
     "weft's random numbers (Philox streams) have no ONNX form; export the inference graph "
     "(a model built with BuildOptions{training=false})"},
    {Op::RandomBernoulli,
     "weft's random numbers (Philox streams) have no ONNX form; export the inference graph "
     "(a model built with BuildOptions{training=false})"},
    {Op::Assign, "a state update has no ONNX form; export the inference graph (a model built "
                 "with BuildOptions{training=false})"},
    {Op::AllReduce, "a collective across ranks has no ONNX form; export a single process's graph"},
};

}  // namespace

const OpExporter* find_exporter(Op op) {
  for (const OpExporter& row : kExporters) {
    if (row.op == op) return &row;
  }
  return nullptr;
}

const NoOnnxForm* find_refusal(Op op) {
  for (const NoOnnxForm& row : kRefused) {
    if (row.op == op) return &row;
  }
  return nullptr;
}

std::vector<Op> exported_ops() {
  std::vector<Op> ops;
  for (const OpExporter& row : kExporters) ops.push_back(row.op);
  return ops;
}

std::vector<Op> refused_ops() {
  std::vector<Op> ops;
  for (const NoOnnxForm& row : kRefused) ops.push_back(row.op);
  return ops;
}

}  // namespace weft::onnx_io
