// Creation kernels (full, iota, Philox random_uniform and random_bernoulli) and the
// state kernel (assign).

#include <cstring>

#include "runtime/philox.h"
#include "runtime/reference/kernels.h"

namespace weft::reference {
namespace {

using Inputs = std::vector<const Tensor*>;

Status check_shape_attr(const Node& node, const Tensor& out) {
  const Shape want(node.ints_attr("shape"));
  if (want != out.shape()) {
    return node_error(node, "result shape " + out.shape().to_string() + " should be " +
                                want.to_string());
  }
  return Status::ok_status();
}

Status full(const Node& node, const Inputs&, Tensor& out) {
  WEFT_RETURN_IF_ERROR(check_shape_attr(node, out));
  if (out.numel() == 0) return Status::ok_status();
  out.set_double(0, node.float_attr("value"));
  const size_t esize = dtype_size(out.dtype());
  char* p = static_cast<char*>(out.raw_data());
  for (int64_t i = 1; i < out.numel(); ++i) std::memcpy(p + i * esize, p, esize);
  return Status::ok_status();
}

Status iota(const Node& node, const Inputs&, Tensor& out) {
  WEFT_RETURN_IF_ERROR(check_shape_attr(node, out));
  WEFT_ASSIGN_OR_RETURN(int axis, checked_axis(node, node.int_attr("axis"), out.rank()));
  const int64_t dim = out.shape().dims[axis];
  int64_t inner = 1;
  for (int d = axis + 1; d < out.rank(); ++d) inner *= out.shape().dims[d];
  for (int64_t i = 0; i < out.numel(); ++i) {
    out.set_double(i, static_cast<double>((i / inner) % dim));
  }
  return Status::ok_status();
}

// The (seed, offset) of a random op's key operand, which must be i64[2].
StatusOr<std::pair<int64_t, int64_t>> random_key(const Node& node, const Tensor& key) {
  if (key.type() != Type{DType::i64, Shape{2}}) {
    return node_error(node, "key must be i64[2] (seed, offset), not " + key.type().to_string());
  }
  return std::make_pair(key.data<int64_t>()[0], key.data<int64_t>()[1]);
}

Status random_uniform(const Node& node, const Inputs& in, Tensor& out) {
  WEFT_RETURN_IF_ERROR(check_shape_attr(node, out));
  WEFT_ASSIGN_OR_RETURN(auto key, random_key(node, *in[0]));
  const auto [seed, offset] = key;
  const int64_t n = out.numel();
  switch (out.dtype()) {
    case DType::f32: {
      float* p = out.data<float>();
      for (int64_t i = 0; i < n; ++i) {
        p[i] = philox::uniform_f32(philox::element_block(seed, offset, static_cast<uint64_t>(i)));
      }
      return Status::ok_status();
    }
    case DType::f64: {
      double* p = out.data<double>();
      for (int64_t i = 0; i < n; ++i) {
        p[i] = philox::uniform_f64(philox::element_block(seed, offset, static_cast<uint64_t>(i)));
      }
      return Status::ok_status();
    }
    case DType::f16:
    case DType::bf16: {
      const bool half = out.dtype() == DType::f16;
      uint16_t* p = out.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) {
        const philox::Block b = philox::element_block(seed, offset, static_cast<uint64_t>(i));
        p[i] = half ? float_to_f16(philox::uniform_f16_value(b))
                    : float_to_bf16(philox::uniform_bf16_value(b));
      }
      return Status::ok_status();
    }
    default: return unsupported_dtype(node, out.dtype());
  }
}

Status random_bernoulli(const Node& node, const Inputs& in, Tensor& out) {
  WEFT_RETURN_IF_ERROR(check_shape_attr(node, out));
  WEFT_ASSIGN_OR_RETURN(auto key, random_key(node, *in[0]));
  const auto [seed, offset] = key;
  const double p = node.float_attr("p");
  for (int64_t i = 0; i < out.numel(); ++i) {
    const float u = philox::uniform_f32(philox::element_block(seed, offset, static_cast<uint64_t>(i)));
    out.set_double(i, static_cast<double>(u) < p ? 1.0 : 0.0);
  }
  return Status::ok_status();
}

// assign(target, value): `out` has the target's type and becomes its new value.
Status assign(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& value = *in[1];
  if (value.type() != out.type()) {
    return node_error(node, "value " + value.type().to_string() +
                                " does not match the target's type " + out.type().to_string());
  }
  std::memcpy(out.raw_data(), value.raw_data(), value.bytes());
  return Status::ok_status();
}

// all_reduce in one process: the reference interpreter is a single process (world size
// 1), where the sum and the mean over the ranks are both the rank's own tensor, whatever
// the optional predicate (false: the identity on every backend). The
// executors of runtime/cpu run it through a communicator (runtime/collective).
Status all_reduce(const Node&, const Inputs& in, Tensor& out) {
  std::memcpy(out.raw_data(), in[0]->raw_data(), out.bytes());
  return Status::ok_status();
}

}  // namespace

void register_creation_kernels(KernelTable& t) {
  t.add(Op::Full, full);
  t.add(Op::Iota, iota);
  t.add(Op::RandomUniform, random_uniform);
  t.add(Op::RandomBernoulli, random_bernoulli);
  t.add(Op::Assign, assign);
  t.add(Op::AllReduce, all_reduce);
}

}  // namespace weft::reference
