// Composite kernels: softmax, log_softmax, layer_norm, cross_entropy, mse, attention and
// attention_grad, computed directly (numerically stable) rather than through their
// decompositions, so that the decompositions can be tested against them.

#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

// ---- attention and attention_grad ------------------------------------------------------

/// attention's operands as `batch` independent problems: q [Sq, D], k [Sk, D], v [Sk, Dv].
struct AttentionDims {
  int64_t batch = 1, sq = 0, sk = 0, d = 0, dv = 0;
};

AttentionDims attention_dims(const Tensor& q, const Tensor& k, const Tensor& v) {
  AttentionDims a;
  const int rank = q.rank();
  for (int i = 0; i < rank - 2; ++i) a.batch *= q.shape().dims[i];
  a.sq = q.shape().dims[rank - 2];
  a.d = q.shape().dims[rank - 1];
  a.sk = k.shape().dims[rank - 2];
  a.dv = v.shape().dims[rank - 1];
  return a;
}

/// Which scores are masked out, [batch, Sq, Sk]: `mask` (if any) broadcast to the scores'
/// shape, and with `causal` every key j > query i.
std::vector<char> masked_scores(const Tensor& q, const Tensor* mask, const AttentionDims& a,
                                bool causal) {
  std::vector<char> out(a.batch * a.sq * a.sk, 0);
  if (mask != nullptr) {
    // The scores' shape: q's leading dims, Sq, Sk; the mask aligned to its right.
    std::vector<int64_t> dims = q.shape().dims;
    dims.back() = a.sk;
    const int rank = static_cast<int>(dims.size()), offset = rank - mask->rank();
    std::vector<int64_t> stride(rank, 0);
    int64_t step = 1;
    for (int d = mask->rank() - 1; d >= 0; --d) {
      if (mask->shape().dims[d] != 1) stride[d + offset] = step;
      step *= mask->shape().dims[d];
    }
    std::vector<int64_t> idx(rank, 0);
    for (size_t f = 0; f < out.size(); ++f) {
      int64_t at = 0;
      for (int d = 0; d < rank; ++d) at += idx[d] * stride[d];
      out[f] = mask->data<uint8_t>()[at] != 0;
      for (int d = rank - 1; d >= 0 && ++idx[d] == dims[d]; --d) idx[d] = 0;
    }
  }
  if (causal) {
    for (int64_t f = 0; f < static_cast<int64_t>(out.size()); ++f) {
      if (f % a.sk > (f / a.sk) % a.sq) out[f] = 1;
    }
  }
  return out;
}

/// Problem b's probabilities softmax(select(masked, -inf, (q·scale)·kᵀ)), [Sq, Sk] in f64,
/// with the primitives' roundings: q·scale rounded to T, each score rounded to T. A row
/// with every key masked is NaN, as softmax of -inf everywhere is.
template <typename T>
std::vector<double> attention_probs(const T* q, const T* k, const char* masked,
                                    const AttentionDims& a, T scale) {
  std::vector<double> p(a.sq * a.sk);
  for (int64_t i = 0; i < a.sq; ++i) {
    double* row = p.data() + i * a.sk;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < a.sk; ++j) {
      double s = 0;
      for (int64_t c = 0; c < a.d; ++c) {
        s += static_cast<double>(static_cast<T>(q[i * a.d + c] * scale)) * static_cast<double>(k[j * a.d + c]);
      }
      row[j] = masked[i * a.sk + j] ? -std::numeric_limits<double>::infinity()
                                    : static_cast<double>(static_cast<T>(s));
      m = std::max(m, row[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < a.sk; ++j) sum += (row[j] = std::exp(row[j] - m));
    for (int64_t j = 0; j < a.sk; ++j) row[j] /= sum;
  }
  return p;
}

Status attention(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor &q = *in[0], &k = *in[1], &v = *in[2];
  const AttentionDims a = attention_dims(q, k, v);
  const std::vector<char> masked =
      masked_scores(q, in.size() > 3 ? in[3] : nullptr, a, node.bool_attr("causal"));
  return dispatch<kFloats>(node, q.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T scale = static_cast<T>(node.float_attr("scale"));
    for (int64_t b = 0; b < a.batch; ++b) {
      const std::vector<double> p = attention_probs(q.data<T>() + b * a.sq * a.d, k.data<T>() + b * a.sk * a.d,
                                                    masked.data() + b * a.sq * a.sk, a, scale);
      const T* vb = v.data<T>() + b * a.sk * a.dv;
      T* y = out.data<T>() + b * a.sq * a.dv;
      for (int64_t i = 0; i < a.sq; ++i) {
        for (int64_t c = 0; c < a.dv; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < a.sk; ++j) acc += p[i * a.sk + j] * static_cast<double>(vb[j * a.dv + c]);
          y[i * a.dv + c] = static_cast<T>(acc);
        }
      }
    }
    return Status::ok_status();
  });
}

// FlashAttention's backward, in f64 from the recomputed probabilities P, giving all
// three results (dq, dk, dv):
//   dv = Pᵀ·dy,  dP = dy·vᵀ,  dS = P ∘ (dP - rowsum(dP ∘ P)),  dq = (dS·k)·scale,
//   dk = dSᵀ·(q·scale).
// rowsum(dP ∘ P) is taken as it is rather than as rowsum(dy ∘ y) (equal up to y's
// rounding), so each result is what the primitives compute; y (operand 3) is not read.
Status attention_grad(const Node& node, const Inputs& in, std::vector<Tensor>& outs) {
  const Tensor &q = *in[0], &k = *in[1], &v = *in[2], &dy = *in[4];
  const AttentionDims a = attention_dims(q, k, v);
  const std::vector<char> masked =
      masked_scores(q, in.size() > 5 ? in[5] : nullptr, a, node.bool_attr("causal"));
  return dispatch<kFloats>(node, q.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T scale = static_cast<T>(node.float_attr("scale"));
    for (int64_t b = 0; b < a.batch; ++b) {
      const T* qb = q.data<T>() + b * a.sq * a.d;
      const T* kb = k.data<T>() + b * a.sk * a.d;
      const T* vb = v.data<T>() + b * a.sk * a.dv;
      const T* dyb = dy.data<T>() + b * a.sq * a.dv;
      const std::vector<double> p = attention_probs(qb, kb, masked.data() + b * a.sq * a.sk, a, scale);
      T* dv = outs[2].data<T>() + b * a.sk * a.dv;
      for (int64_t j = 0; j < a.sk; ++j) {
        for (int64_t c = 0; c < a.dv; ++c) {
          double acc = 0;
          for (int64_t i = 0; i < a.sq; ++i) acc += p[i * a.sk + j] * static_cast<double>(dyb[i * a.dv + c]);
          dv[j * a.dv + c] = static_cast<T>(acc);
        }
      }
      std::vector<double> ds(a.sq * a.sk);
      for (int64_t i = 0; i < a.sq; ++i) {
        double delta = 0;
        for (int64_t j = 0; j < a.sk; ++j) {
          double dp = 0;
          for (int64_t c = 0; c < a.dv; ++c) {
            dp += static_cast<double>(dyb[i * a.dv + c]) * static_cast<double>(vb[j * a.dv + c]);
          }
          ds[i * a.sk + j] = dp;
          delta += dp * p[i * a.sk + j];
        }
        for (int64_t j = 0; j < a.sk; ++j) ds[i * a.sk + j] = p[i * a.sk + j] * (ds[i * a.sk + j] - delta);
      }
      T* dq = outs[0].data<T>() + b * a.sq * a.d;
      for (int64_t i = 0; i < a.sq; ++i) {
        for (int64_t c = 0; c < a.d; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < a.sk; ++j) acc += ds[i * a.sk + j] * static_cast<double>(kb[j * a.d + c]);
          dq[i * a.d + c] = static_cast<T>(acc * static_cast<double>(scale));
        }
      }
      T* dk = outs[1].data<T>() + b * a.sk * a.d;
      for (int64_t j = 0; j < a.sk; ++j) {
        for (int64_t c = 0; c < a.d; ++c) {
          double acc = 0;
          for (int64_t i = 0; i < a.sq; ++i) {
            acc += ds[i * a.sk + j] * static_cast<double>(static_cast<T>(qb[i * a.d + c] * scale));
          }
          dk[j * a.d + c] = static_cast<T>(acc);
        }
      }
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
  t.add(Op::Attention, attention);
  t.add_several(Op::AttentionGrad, attention_grad);
}

}  // namespace weft::reference
