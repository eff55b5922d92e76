// Tensors as data: constants, shapes and the movement ops.
#include "interop/onnx/convert.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {

void constant(NodeContext& n) {
  n.expect_attrs({"value", "value_float", "value_floats", "value_int", "value_ints"});
  if (const onnx::TensorProto* t = n.attr_tensor("value")) {
    StatusOr<Tensor> v = tensor_from_proto(*t, "");
    if (!v.ok()) n.invalid(v.error().message);
    n.set_constant_output(0, std::move(*v));
  } else if (n.has_attr("value_float")) {
    n.set_constant_output(0, Tensor::scalar(DType::f32, n.attr_float("value_float", 0)));
  } else if (n.has_attr("value_int")) {
    n.set_constant_output(0, Tensor::scalar(DType::i64, static_cast<double>(n.attr_int("value_int", 0))));
  } else if (n.has_attr("value_floats")) {
    std::vector<double> v = n.attr_floats("value_floats");
    n.set_constant_output(0, Tensor::from_doubles(DType::f32, Shape({static_cast<int64_t>(v.size())}), v));
  } else if (n.has_attr("value_ints")) {
    std::vector<int64_t> v = n.attr_ints("value_ints");
    n.set_constant_output(0, Tensor::from_vector<int64_t>(Shape({static_cast<int64_t>(v.size())}), v));
  } else {
    n.invalid("a Constant needs a value attribute");
  }
}

void identity(NodeContext& n) {
  n.expect_attrs({});
  if (const Tensor* t = n.constant(0)) {
    n.set_constant_output(0, *t);
  } else {
    n.set_output(0, n.input(0));
  }
}

void shape(NodeContext& n) {
  n.expect_attrs({"start", "end"});
  const Shape s = n.input_type(0).shape;
  const int64_t rank = s.rank();
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  const int64_t start = clamp(n.attr_int("start", 0)), end = clamp(n.attr_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(s[static_cast<int>(d)]);
  n.set_constant_output(0, Tensor::from_vector<int64_t>(Shape({static_cast<int64_t>(dims.size())}), dims));
}

void reshape(NodeContext& n) {
  n.expect_attrs({"allowzero"});
  const Shape in = n.input_type(0).shape;
  std::vector<int64_t> target = n.ints_input(1, "the shape");
  const bool allowzero = n.attr_int("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t k = 0; k < target.size(); ++k) {
    if (target[k] == 0 && !allowzero) {
      if (static_cast<int>(k) >= in.rank()) n.invalid("shape entry 0 copies a dimension the input lacks");
      target[k] = in[static_cast<int>(k)];
    }
    if (target[k] == -1) {
      if (infer >= 0) n.invalid("the shape has two -1 entries");
      infer = static_cast<int64_t>(k);
    } else if (target[k] < 0) {
      n.invalid("shape entry " + std::to_string(target[k]) + " is negative");
    } else {
      known *= target[k];
    }
  }
  if (infer >= 0) target[static_cast<size_t>(infer)] = known == 0 ? 0 : in.numel() / known;
  n.set_output(0, n.e().reshape(n.input(0), target));
}

const OpConverter kOps[] = {
    {"Constant", 1, constant},
    {"Identity", 1, identity},
    {"Shape", 1, shape},
    {"Reshape", 5, reshape},
};

}  // namespace

std::span<const OpConverter> tensor_converters() { return kOps; }

}  // namespace weft::onnx_io
