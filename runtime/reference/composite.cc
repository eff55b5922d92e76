// Composite kernels: softmax, log_softmax, layer_norm, cross_entropy and mse, computed
// directly (numerically stable) rather than through their decompositions, so that the
// decompositions can be tested against them.

#include <cmath>
#include <limits>

#include "runtime/reference/kernels.h"

namespace weft::reference {
namespace {

using Inputs = std::vector<const Tensor*>;

template <bool kLog>
Status softmax(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  WEFT_RETURN_IF_ERROR(check_result(node, x.type(), out));
  WEFT_ASSIGN_OR_RETURN(int axis, checked_axis(node, node.int_attr("axis"), x.rank()));
  const int64_t dim = x.shape().dims[axis];
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape().dims[d];
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.shape().dims[d];
  return dispatch<kFloats>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* src = x.data<T>() + o * dim * inner + i;
        T* dst = out.data<T>() + o * dim * inner + i;
        T m = -std::numeric_limits<T>::infinity();
        for (int64_t j = 0; j < dim; ++j) m = std::max(m, src[j * inner]);
        if (std::isinf(m)) m = 0;  // All -inf (or an inf): avoid inf - inf.
        double sum = 0;
        for (int64_t j = 0; j < dim; ++j) sum += std::exp(static_cast<double>(src[j * inner] - m));
        for (int64_t j = 0; j < dim; ++j) {
          const double z = static_cast<double>(src[j * inner] - m);
          dst[j * inner] = static_cast<T>(kLog ? z - std::log(sum) : std::exp(z) / sum);
        }
      }
    }
    return Status::ok_status();
  });
}

Status layer_norm(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  const Tensor& gamma = *in[1];
  const Tensor& beta = *in[2];
  WEFT_RETURN_IF_ERROR(check_result(node, x.type(), out));
  // The normalized axes must be the trailing ones (in any order, each once).
  const IntList& axes = node.ints_attr("axes");
  const int k = static_cast<int>(axes.size());
  if (k < 1 || k > x.rank()) {
    return node_error(node, "axes " + attribute_to_string(axes) + " are invalid for rank " +
                                std::to_string(x.rank()));
  }
  std::vector<bool> seen(x.rank(), false);
  for (int i = 0; i < k; ++i) {
    WEFT_ASSIGN_OR_RETURN(int a, checked_axis(node, axes[i], x.rank()));
    if (a < x.rank() - k || seen[a]) {
      return node_error(node, "axes " + attribute_to_string(axes) +
                                  " must be the trailing axes of " + x.type().to_string());
    }
    seen[a] = true;
  }
  const Shape norm_shape(std::vector<int64_t>(x.shape().dims.end() - k, x.shape().dims.end()));
  const Type param_type{x.dtype(), norm_shape};
  if (gamma.type() != param_type || beta.type() != param_type) {
    return node_error(node, "gamma and beta must be " + param_type.to_string() + ", not " +
                                gamma.type().to_string() + " and " + beta.type().to_string());
  }
  const double eps = node.float_attr("eps");
  const int64_t size = norm_shape.numel();
  const int64_t rows = size == 0 ? 0 : x.numel() / size;
  return dispatch<kFloats>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* g = gamma.data<T>();
    const T* b = beta.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* src = x.data<T>() + r * size;
      T* dst = out.data<T>() + r * size;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < size; ++i) mean += src[i];
      mean /= static_cast<double>(size);
      for (int64_t i = 0; i < size; ++i) var += (src[i] - mean) * (src[i] - mean);
      var /= static_cast<double>(size);  // Biased, as PyTorch.
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < size; ++i) {
        dst[i] = static_cast<T>((src[i] - mean) * inv * g[i] + b[i]);
      }
    }
    return Status::ok_status();
  });
}

StatusOr<int> reduction_mode(const Node& node) {
  const std::string& r = node.str_attr("reduction");
  if (r == "mean") return 0;
  if (r == "sum") return 1;
  if (r == "none") return 2;
  return node_error(node, "reduction must be \"mean\", \"sum\" or \"none\", not \"" + r + "\"");
}

Status cross_entropy(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& logits = *in[0];
  const Tensor& labels = *in[1];
  if (logits.rank() != 2 || labels.rank() != 1 || !is_integer(labels.dtype()) ||
      labels.shape()[0] != logits.shape()[0]) {
    return node_error(node, "expects logits [N,C] and integer labels [N], got " +
                                logits.type().to_string() + " and " + labels.type().to_string());
  }
  WEFT_ASSIGN_OR_RETURN(int mode, reduction_mode(node));
  const int64_t n = logits.shape()[0], c = logits.shape()[1];
  WEFT_RETURN_IF_ERROR(check_result(
      node, Type{logits.dtype(), mode == 2 ? Shape{n} : Shape{}}, out));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = int_element(labels, i);
    if (label < 0 || label >= c) {
      return node_error(node, "label " + std::to_string(label) + " at position " +
                                  std::to_string(i) + " is out of range for " +
                                  std::to_string(c) + " classes");
    }
  }
  return dispatch<kFloats>(node, logits.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T* row = logits.data<T>() + i * c;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < c; ++j) m = std::max(m, static_cast<double>(row[j]));
      double sum = 0;
      for (int64_t j = 0; j < c; ++j) sum += std::exp(row[j] - m);
      const double loss = m + std::log(sum) - row[int_element(labels, i)];
      if (mode == 2) out.data<T>()[i] = static_cast<T>(loss);
      total += loss;
    }
    if (mode != 2) {
      out.data<T>()[0] = static_cast<T>(mode == 0 ? total / static_cast<double>(n) : total);
    }
    return Status::ok_status();
  });
}

Status mse(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (a.type() != b.type()) {
    return node_error(node, "operands differ: " + a.type().to_string() + " and " +
                                b.type().to_string());
  }
  WEFT_ASSIGN_OR_RETURN(int mode, reduction_mode(node));
  WEFT_RETURN_IF_ERROR(check_result(node, mode == 2 ? a.type() : Type{a.dtype(), Shape{}}, out));
  return dispatch<kFloats>(node, a.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    double total = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double d = static_cast<double>(pa[i]) - static_cast<double>(pb[i]);
      if (mode == 2) out.data<T>()[i] = static_cast<T>(d * d);
      total += d * d;
    }
    if (mode != 2) {
      out.data<T>()[0] =
          static_cast<T>(mode == 0 ? total / static_cast<double>(a.numel()) : total);
    }
    return Status::ok_status();
  });
}

}  // namespace

void register_composite_kernels(KernelTable& t) {
  t.add(Op::Softmax, softmax<false>);
  t.add(Op::LogSoftmax, softmax<true>);
  t.add(Op::LayerNorm, layer_norm);
  t.add(Op::CrossEntropy, cross_entropy);
  t.add(Op::Mse, mse);
}

}  // namespace weft::reference
