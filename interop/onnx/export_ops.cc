// The export table (export_context.h): a row per weft op saying how it becomes ONNX
// (opset 17) nodes, in one file per family, and here the elementwise ops and reductions,
// the ops with no ONNX form and the reason, and the lookup over the families. Semantics
// on both sides: runtime/reference/interpreter.h and ONNX's schemas
// (onnx/defs/*/defs.cc).
#include <string>
#include <vector>

#include "interop/onnx/export_context.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {

// ---- Elementwise.

/// A one-to-one mapping: the row's ONNX op on the operands, in order.
void direct(ExportContext& c) {
  std::vector<std::string> inputs;
  for (int i = 0; i < c.num_operands(); ++i) inputs.push_back(c.in(i));
  c.add(c.row().onnx_op, inputs, {c.out()});
}

void ne(ExportContext& c) { c.add("Not", {c.add1("Equal", {c.in(0), c.in(1)})}, {c.out()}); }

// ONNX's Sin, Cos and Softplus take no bf16: computed in f32 and rounded back, as weft
// computes bf16.
void unary_bf16_in_f32(ExportContext& c) {
  if (c.in_type(0).dtype != DType::bf16) return direct(c);
  std::string y = c.add1(c.row().onnx_op, {c.in_as(0, DType::f32)});
  add_attr(c.add("Cast", {y}, {c.out()}), "to", static_cast<int64_t>(onnx_elem_type(DType::bf16)));
}

// ONNX's Relu takes no u8, which relu leaves as it is.
void relu(ExportContext& c) { c.add(c.in_type(0).dtype == DType::u8 ? "Identity" : "Relu", {c.in(0)}, {c.out()}); }

void pow(ExportContext& c) {
  if (c.in_type(0).dtype == DType::u8) c.refuse("ONNX's Pow takes no u8 (weft's wraps modulo 256)");
  direct(c);
}

// ONNX's orderings take numbers only: bools compare as u8 (false < true), as weft's do.
void ordering(ExportContext& c) {
  const DType dt = c.in_type(0).dtype == DType::boolean ? DType::u8 : c.in_type(0).dtype;
  c.add(c.row().onnx_op, {c.in_as(0, dt), c.in_as(1, dt)}, {c.out()});
}

void log1p(ExportContext& c) {
  const DType via = f32_for_halves(c.in_type(0).dtype);
  const std::string y = c.out_via(via);
  c.add("Log", {c.add1("Add", {c.in_as(0, via), c.scalar(1.0, via)})}, {y});
  c.finish_via(y, via);
}

void rsqrt(ExportContext& c) {
  const DType via = f32_for_halves(c.in_type(0).dtype);
  const std::string y = c.out_via(via);
  c.add("Reciprocal", {c.add1("Sqrt", {c.in_as(0, via)})}, {y});
  c.finish_via(y, via);
}

// The reference's formulas, in its order of operations (opset 17 has no Gelu).
void gelu(ExportContext& c) {
  const DType dt = f32_for_halves(c.in_type(0).dtype);
  const std::string x = c.in_as(0, dt);
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
  const std::string y = c.out_via(dt);
  c.add("Mul", {c.add1("Mul", {c.scalar(0.5, dt), x}), c.add1("Add", {c.scalar(1.0, dt), inner})}, {y});
  c.finish_via(y, dt);
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

// ONNX's ReduceMax and ReduceMin take no bools: reduced as u8 (any, all) and cast back;
// ReduceSum takes no u8.
void reduce(ExportContext& c) {
  const IntList* axes = optional_ints(c.node(), "axes");
  const DType dt = c.in_type(0).dtype;
  if (dt == DType::u8 && c.node().op == Op::Sum) c.refuse("ONNX's ReduceSum takes no u8 (weft's wraps modulo 256)");
  const bool as_u8 = dt == DType::boolean && (c.node().op == Op::Max || c.node().op == Op::Min);
  if (axes && axes->empty()) {  // Reduces nothing; ONNX would read [] as all axes.
    c.add("Identity", {c.in(0)}, {c.out()});
    return;
  }
  // ReduceSum takes its axes as an input from opset 13, the others from opset 18.
  const bool axes_input = c.node().op == Op::Sum;
  std::vector<std::string> inputs = {as_u8 ? c.in_as(0, DType::u8) : c.in(0)};
  if (axes && axes_input) inputs.push_back(c.ints(*axes));
  const std::string y = as_u8 ? c.fresh() : c.out();
  onnx::NodeProto& n = c.add(c.row().onnx_op, inputs, {y});
  if (axes && !axes_input) add_attr(n, "axes", *axes);
  add_attr(n, "keepdims", int64_t{c.node().bool_attr("keepdims")});
  if (as_u8) add_attr(c.add("Cast", {y}, {c.out()}), "to", static_cast<int64_t>(onnx_elem_type(DType::boolean)));
}

void argmax(ExportContext& c) {
  onnx::NodeProto& n = c.add("ArgMax", {c.in(0)}, {c.out()});
  add_attr(n, "axis", c.node().int_attr("axis"));
  add_attr(n, "keepdims", int64_t{c.node().bool_attr("keepdims")});
}

const OpExporter kRows[] = {
    {Op::Neg, "Neg", direct},
    {Op::Abs, "Abs", direct},
    {Op::Exp, "Exp", direct},
    {Op::Log, "Log", direct},
    {Op::Log1p, nullptr, log1p},
    {Op::Sqrt, "Sqrt", direct},
    {Op::Rsqrt, nullptr, rsqrt},
    {Op::Tanh, "Tanh", direct},
    {Op::Sigmoid, "Sigmoid", direct},
    {Op::Relu, nullptr, relu},
    {Op::Sin, "Sin", unary_bf16_in_f32},
    {Op::Cos, "Cos", unary_bf16_in_f32},
    {Op::Erf, "Erf", direct},
    {Op::Sign, "Sign", direct},
    {Op::Floor, nullptr, floor},
    {Op::Not, "Not", direct},
    {Op::Gelu, nullptr, gelu},
    {Op::Softplus, "Softplus", unary_bf16_in_f32},
    {Op::Cast, nullptr, cast},
    {Op::Add, "Add", direct},
    {Op::Sub, "Sub", direct},
    {Op::Mul, "Mul", direct},
    {Op::Div, "Div", direct},
    {Op::Pow, "Pow", pow},
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
    {Op::Attention, "attention has no ONNX 1.12 operator; export the model built without "
                    "fuse-attention (TrainOptions::fuse_attention), whose primitives export"},
    {Op::AttentionGrad, kGradient},
};

}  // namespace

std::span<const OpExporter> elementwise_exporters() { return kRows; }

namespace {
const std::span<const OpExporter> kFamilies[] = {elementwise_exporters(), movement_exporters(), nn_exporters(),
                                                 loop_exporters()};
}  // namespace

const OpExporter* find_exporter(Op op) {
  for (std::span<const OpExporter> family : kFamilies) {
    for (const OpExporter& row : family) {
      if (row.op == op) return &row;
    }
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
  for (std::span<const OpExporter> family : kFamilies) {
    for (const OpExporter& row : family) ops.push_back(row.op);
  }
  return ops;
}

std::vector<Op> refused_ops() {
  std::vector<Op> ops;
  for (const NoOnnxForm& row : kRefused) ops.push_back(row.op);
  return ops;
}

}  // namespace weft::onnx_io
