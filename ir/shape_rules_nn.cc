// Shape rules of contractions and windowed ops (matmul, conv over 1-3 spatial dims, 2-D pooling and their
// backward ops), creation ops, assign and composites. Semantics: shape_rules.h.

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "ir/checked_math.h"
#include "ir/shape_rules_internal.h"
#include "ir/window.h"

namespace weft::shape_rules_internal {
namespace {

// ---- Matmul --------------------------------------------------------------------------

// The operand as the product sees it: the last two dimensions swapped under `flag`.
Type maybe_transposed(const Type& t, bool flag) {
  Type out = t;
  if (flag) std::swap(out.shape.dims[t.shape.rank() - 2], out.shape.dims[t.shape.rank() - 1]);
  return out;
}

StatusOr<Type> matmul(const Node& node, const std::vector<Type>& in) {
  if (in[0].shape.rank() < 2 || in[1].shape.rank() < 2) {
    return rule_error("operands need rank >= 2, got lhs " + str(in[0]) + " and rhs " +
                      str(in[1]) +
                      "; 1-D operands are not allowed: reshape a vector to [1,k] or [k,1]");
  }
  const Type a = maybe_transposed(in[0], node.bool_attr("transpose_a"));
  const Type b = maybe_transposed(in[1], node.bool_attr("transpose_b"));
  WEFT_RETURN_IF_ERROR(require_same_dtype(a, "lhs", b, "rhs"));
  WEFT_RETURN_IF_ERROR(require_dtype(a, "lhs", is_numeric(a.dtype), "a numeric dtype"));
  const int ra = a.shape.rank(), rb = b.shape.rank();
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1];
  const int64_t k2 = b.shape[rb - 2], n = b.shape[rb - 1];
  if (k != k2) {
    return rule_error("contraction dims differ: lhs " + str(a) + " has " + std::to_string(k) +
                      " columns but rhs " + str(b) + " has " + std::to_string(k2) + " rows");
  }
  Type a_batch{a.dtype, std::vector<int64_t>(a.shape.dims.begin(), a.shape.dims.end() - 2)};
  Type b_batch{b.dtype, std::vector<int64_t>(b.shape.dims.begin(), b.shape.dims.end() - 2)};
  auto batch = broadcast_shapes(a_batch.shape, b_batch.shape);
  if (!batch) {
    return rule_error("batch dims " + a_batch.shape.to_string() + " of lhs " + str(a) + " and " +
                      b_batch.shape.to_string() + " of rhs " + str(b) + " do not broadcast");
  }
  batch->dims.push_back(m);
  batch->dims.push_back(n);
  return Type{a.dtype, std::move(*batch)};
}

// ---- Convolution and pooling ----------------------------------------------------------

struct Window {
  IntList kernel;  // conv: from w's shape; pool: the attribute
  IntList stride, padding, dilation;
  int64_t groups = 1;
};

/// The convolution window of `node` over `spatial` dims (the kernel comes from w).
StatusOr<Window> conv_window(const Node& node, int spatial) {
  WEFT_ASSIGN_OR_RETURN(ConvAttrs attrs, conv_attrs(node, spatial));
  Window win;
  win.stride = std::move(attrs.stride);
  win.padding = std::move(attrs.padding);
  win.dilation = std::move(attrs.dilation);
  for (auto [list, name, min] : {std::tuple{&win.stride, "stride", 1},
                                 std::tuple{&win.padding, "padding", 0},
                                 std::tuple{&win.dilation, "dilation", 1}}) {
    for (int64_t v : *list) {
      if (v < min) {
        return rule_error(std::string(name) + " " + str(*list) + " must have entries >= " +
                          std::to_string(min));
      }
    }
  }
  win.groups = node.int_attr("groups");
  if (win.groups < 1) return rule_error("groups " + std::to_string(win.groups) + " must be >= 1");
  return win;
}

StatusOr<Window> pool_window(const Node& node) {
  Window win;
  WEFT_ASSIGN_OR_RETURN(win.kernel, list_attr(node, "kernel", 2, 1));
  win.stride = win.kernel;
  if (node.has_attr("stride")) {
    WEFT_ASSIGN_OR_RETURN(win.stride, list_attr(node, "stride", 2, 1));
  }
  WEFT_ASSIGN_OR_RETURN(win.padding, list_attr(node, "padding", 2, 0));
  win.dilation = {1, 1};
  for (int i = 0; i < 2; ++i) {
    // padding <= kernel / 2 is 2 * padding <= kernel without overflowing on huge padding.
    if (win.padding[i] > win.kernel[i] / 2) {
      return rule_error("padding " + str(win.padding) + " must be at most half of kernel " +
                        str(win.kernel));
    }
  }
  return win;
}

/// The output's spatial sizes of a window of `win` sliding over x's spatial dims (floor
/// mode).
StatusOr<std::vector<int64_t>> window_output(const Type& x, std::string_view x_name,
                                             const Window& win) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < win.kernel.size(); ++i) {
    const std::string axis = " on spatial axis " + std::to_string(i);
    Checked span = Checked(win.dilation[i]) * (Checked(win.kernel[i]) - 1) + 1;
    if (!span.ok()) {
      return rule_error("the window of kernel " + str(win.kernel) + " with dilation " +
                        str(win.dilation) + " spans more than int64 can hold" + axis +
                        " (dilation * (kernel - 1) + 1 overflows); check dilation and the "
                        "kernel size");
    }
    Checked padded = Checked(x.shape[2 + i]) + Checked(win.padding[i]) * 2;
    if (!padded.ok()) {
      return rule_error("padding " + str(win.padding) + " overflows int64" + axis + " of " +
                        std::string(x_name) + " " + str(x) +
                        " (size + 2 * padding); check the padding");
    }
    if (padded.value() < span.value()) {
      return rule_error("window " + str(win.kernel) + " (dilation " + str(win.dilation) +
                        ") does not fit " + std::string(x_name) + " " + str(x) +
                        " padded by " + str(win.padding) + ": the output would be empty");
    }
    // A kernel dim of 0 makes span = 1 - dilation <= 0, so this may still overflow.
    Checked size = (padded - span) / win.stride[i] + 1;
    if (!size.ok()) {
      return rule_error("the output size of kernel " + str(win.kernel) + " with dilation " +
                        str(win.dilation) + " over " + std::string(x_name) + " " + str(x) +
                        " padded by " + str(win.padding) + " overflows int64" + axis);
    }
    out.push_back(size.value());
  }
  return out;
}

Status require_nchw(const Type& t, std::string_view name, std::string_view layout) {
  if (t.shape.rank() == 4) return Status();
  return rule_error(std::string(name) + " " + str(t) + " must be 4-D " + std::string(layout));
}

/// The number of spatial dims of convolution input `x` (1 to 3), or an error.
StatusOr<int> conv_spatial(const Type& x, std::string_view x_name) {
  const int spatial = x.shape.rank() - 2;
  if (spatial >= 1 && spatial <= kMaxSpatialDims) return spatial;
  return rule_error(std::string(x_name) + " " + str(x) +
                    " must be 3-D [N, C, W], 4-D [N, C, H, W] or 5-D [N, C, D, H, W]");
}

/// conv's result type; `x_name`/`w_name` say how the caller's operands are called.
StatusOr<Type> conv_type(const Node& node, const Type& x, std::string_view x_name,
                         const Type& w, std::string_view w_name) {
  WEFT_ASSIGN_OR_RETURN(int spatial, conv_spatial(x, x_name));
  if (w.shape.rank() != x.shape.rank()) {
    static const char* const kLayouts[] = {"[O, C/groups, kw]", "[O, C/groups, kh, kw]",
                                           "[O, C/groups, kd, kh, kw]"};
    return rule_error(std::string(w_name) + " " + str(w) + " must be " +
                      std::to_string(spatial + 2) + "-D " + kLayouts[spatial - 1] + " for " +
                      std::string(x_name) + " " + str(x));
  }
  WEFT_ASSIGN_OR_RETURN(Window win, conv_window(node, spatial));
  WEFT_RETURN_IF_ERROR(require_same_dtype(x, x_name, w, w_name));
  WEFT_RETURN_IF_ERROR(require_dtype(x, x_name, is_floating(x.dtype), "a floating dtype"));
  const int64_t c = x.shape[1], o = w.shape[0], g = win.groups;
  if (c % g != 0 || o % g != 0) {
    return rule_error("groups " + std::to_string(g) + " must divide the input channels of " +
                      std::string(x_name) + " " + str(x) + " (C=" + std::to_string(c) +
                      ") and the output channels of " + std::string(w_name) + " " + str(w) +
                      " (O=" + std::to_string(o) + ")");
  }
  if (w.shape[1] != c / g) {
    return rule_error("channel mismatch: " + std::string(w_name) + " " + str(w) + " has " +
                      std::to_string(w.shape[1]) + " input channels per group but " +
                      std::string(x_name) + " " + str(x) + " has C=" + std::to_string(c) +
                      " and groups=" + std::to_string(g) + ", so it needs " +
                      std::to_string(c / g));
  }
  win.kernel.assign(w.shape.dims.begin() + 2, w.shape.dims.end());
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> spatial_out, window_output(x, x_name, win));
  std::vector<int64_t> dims{x.shape[0], o};
  dims.insert(dims.end(), spatial_out.begin(), spatial_out.end());
  return Type{x.dtype, Shape(std::move(dims))};
}

/// `result` (a backward op's type), after checking that the forward op's output type
/// `forward_out` equals `grad_y`'s.
StatusOr<Type> check_backward(const Type& forward_out, const Type& grad_y,
                              const std::string& forward, Type result) {
  if (forward_out == grad_y) return result;
  return rule_error("grad_y " + str(grad_y) + " does not match " + forward + "'s output " +
                    str(forward_out));
}

StatusOr<Type> conv(const Node& node, const std::vector<Type>& in) {
  return conv_type(node, in[0], "x", in[1], "w");
}

StatusOr<Type> conv_backward_input(const Node& node, const std::vector<Type>& in) {
  WEFT_ASSIGN_OR_RETURN(Shape x_shape, shape_attr(node, "input_shape"));
  Type x{in[0].dtype, x_shape};
  WEFT_ASSIGN_OR_RETURN(Type y, conv_type(node, x, "input_shape", in[1], "w"));
  return check_backward(y, in[0], "conv of input_shape " + x_shape.to_string() + " and w " +
                                      str(in[1]), x);
}

StatusOr<Type> conv_backward_weight(const Node& node, const std::vector<Type>& in) {
  WEFT_ASSIGN_OR_RETURN(Shape w_shape, shape_attr(node, "weight_shape"));
  Type w{in[0].dtype, w_shape};
  WEFT_ASSIGN_OR_RETURN(Type y, conv_type(node, in[0], "x", w, "weight_shape"));
  return check_backward(y, in[1], "conv of x " + str(in[0]) + " and weight_shape " +
                                      w_shape.to_string(), w);
}

template <bool floating_only>
StatusOr<Type> pool(const Node& node, const std::vector<Type>& in) {
  const Type& x = in[0];
  WEFT_RETURN_IF_ERROR(require_nchw(x, "x", "[N, C, H, W]"));
  WEFT_RETURN_IF_ERROR(require_dtype(x, "x", floating_only ? is_floating(x.dtype)
                                                           : is_numeric(x.dtype),
                                     floating_only ? "a floating dtype" : "a numeric dtype"));
  WEFT_ASSIGN_OR_RETURN(Window win, pool_window(node));
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> hw, window_output(x, "x", win));
  return Type{x.dtype, Shape({x.shape[0], x.shape[1], hw[0], hw[1]})};
}

StatusOr<Type> max_pool2d_backward(const Node& node, const std::vector<Type>& in) {
  WEFT_ASSIGN_OR_RETURN(Type y, pool<false>(node, {in[0]}));
  return check_backward(y, in[1], "max_pool2d of x " + str(in[0]), in[0]);
}

StatusOr<Type> max_pool2d_select(const Node& node, const std::vector<Type>& in) {
  WEFT_ASSIGN_OR_RETURN(Type y, pool<false>(node, {in[0]}));
  if (in[1] == in[0]) return y;
  return rule_error("g " + str(in[1]) + " must have x " + str(in[0]) + "'s type");
}

StatusOr<Type> avg_pool2d_backward(const Node& node, const std::vector<Type>& in) {
  WEFT_ASSIGN_OR_RETURN(Shape x_shape, shape_attr(node, "input_shape"));
  Type x{in[0].dtype, x_shape};
  StatusOr<Type> y = pool<true>(node, {x});
  if (!y.ok()) return rule_error(y.error().message + " (x is input_shape)");
  return check_backward(*y, in[0], "avg_pool2d of input_shape " + x_shape.to_string(), x);
}

// ---- Creation ------------------------------------------------------------------------

StatusOr<Type> full(const Node& node, const std::vector<Type>&) {
  WEFT_ASSIGN_OR_RETURN(Shape shape, shape_attr(node, "shape"));
  return Type{node.dtype_attr("dtype"), std::move(shape)};
}

StatusOr<Type> iota(const Node& node, const std::vector<Type>&) {
  WEFT_ASSIGN_OR_RETURN(Shape shape, shape_attr(node, "shape"));
  Type out{node.dtype_attr("dtype"), std::move(shape)};
  WEFT_RETURN_IF_ERROR(require_dtype(out, "result", is_numeric(out.dtype), "a numeric dtype"));
  WEFT_RETURN_IF_ERROR(normalize(node.int_attr("axis"), "axis", out, "result").status());
  return out;
}

Status require_key(const Type& key) {
  if (key.dtype == DType::i64 && key.shape == Shape({2})) return Status();
  return rule_error("key " + str(key) + " must be i64[2]");
}

StatusOr<Type> random_uniform(const Node& node, const std::vector<Type>& in) {
  WEFT_RETURN_IF_ERROR(require_key(in[0]));
  WEFT_ASSIGN_OR_RETURN(Shape shape, shape_attr(node, "shape"));
  Type out{node.dtype_attr("dtype"), std::move(shape)};
  WEFT_RETURN_IF_ERROR(require_dtype(out, "result", is_floating(out.dtype), "a floating dtype"));
  return out;
}

StatusOr<Type> random_bernoulli(const Node& node, const std::vector<Type>& in) {
  WEFT_RETURN_IF_ERROR(require_key(in[0]));
  WEFT_ASSIGN_OR_RETURN(Shape shape, shape_attr(node, "shape"));
  double p = node.float_attr("p");
  if (!(p >= 0.0 && p <= 1.0)) return rule_error("p " + format_float(p) + " must be in [0, 1]");
  return Type{node.dtype_attr("dtype"), std::move(shape)};
}

// ---- State ---------------------------------------------------------------------------

StatusOr<Type> assign(const Node&, const std::vector<Type>& in) {
  if (in[0] == in[1]) return in[0];
  return rule_error("value " + str(in[1]) + " must have the target's type " + str(in[0]));
}

// ---- Composites ----------------------------------------------------------------------

StatusOr<Type> softmax(const Node& node, const std::vector<Type>& in) {
  WEFT_RETURN_IF_ERROR(require_dtype(in[0], "operand", is_floating(in[0].dtype),
                                     "a floating dtype"));
  WEFT_RETURN_IF_ERROR(normalize(node.int_attr("axis"), "axis", in[0], "operand").status());
  return in[0];
}

StatusOr<Type> layer_norm(const Node& node, const std::vector<Type>& in) {
  const Type& x = in[0];
  WEFT_RETURN_IF_ERROR(require_dtype(x, "x", is_floating(x.dtype), "a floating dtype"));
  WEFT_ASSIGN_OR_RETURN(std::vector<int> axes,
                        normalize_unique(node.ints_attr("axes"), "axes", x, "x"));
  const int k = static_cast<int>(axes.size());
  const int rank = x.shape.rank();
  if (k == 0 || std::any_of(axes.begin(), axes.end(), [&](int a) { return a < rank - k; })) {
    return rule_error("axes " + str(node.ints_attr("axes")) + " must be the last " +
                      std::to_string(std::max(k, 1)) + " axes of x " + str(x) +
                      " (layer_norm normalizes trailing dims)");
  }
  Type param{x.dtype, std::vector<int64_t>(x.shape.dims.end() - k, x.shape.dims.end())};
  for (int i : {1, 2}) {
    const char* name = i == 1 ? "gamma" : "beta";
    if (!(in[i] == param)) {
      return rule_error(std::string(name) + " " + str(in[i]) + " must be " + str(param) +
                        " (x " + str(x) + "'s normalized dims)");
    }
  }
  if (node.float_attr("eps") < 0) return rule_error("eps must be >= 0");
  return x;
}

StatusOr<Type> cross_entropy(const Node& node, const std::vector<Type>& in) {
  const Type& logits = in[0];
  const Type& labels = in[1];
  WEFT_ASSIGN_OR_RETURN(std::string reduction, reduction_attr(node));
  if (logits.shape.rank() != 2 || !is_floating(logits.dtype)) {
    return rule_error("logits " + str(logits) + " must be a float [N, C] tensor");
  }
  if (labels.dtype != DType::i64 || labels.shape != Shape({logits.shape[0]})) {
    return rule_error("labels " + str(labels) + " must be i64[" +
                      std::to_string(logits.shape[0]) + "], one class index per row of logits " +
                      str(logits) + " (one_hot or argmax converts other forms)");
  }
  if (reduction == "none") return Type{logits.dtype, labels.shape};
  return Type{logits.dtype, Shape()};
}

StatusOr<Type> mse(const Node& node, const std::vector<Type>& in) {
  WEFT_ASSIGN_OR_RETURN(std::string reduction, reduction_attr(node));
  WEFT_RETURN_IF_ERROR(require_same_dtype(in[0], "pred", in[1], "target"));
  WEFT_RETURN_IF_ERROR(require_dtype(in[0], "pred", is_floating(in[0].dtype),
                                     "a floating dtype"));
  if (!(in[0].shape == in[1].shape)) {
    return rule_error("pred " + str(in[0]) + " and target " + str(in[1]) +
                      " must have the same shape (mse does not broadcast)");
  }
  if (reduction == "none") return in[0];
  return Type{in[0].dtype, Shape()};
}

// attention's q, k, v (and dy, mask): the result type, or what is wrong.
StatusOr<Type> attention_type(const Node& node, const std::vector<Type>& in, size_t mask_at) {
  if (in.size() != mask_at && in.size() != mask_at + 1) {
    return rule_error("takes " + std::to_string(mask_at) + " operands and an optional mask, got " +
                      std::to_string(in.size()));
  }
  const Type &q = in[0], &k = in[1], &v = in[2];
  WEFT_RETURN_IF_ERROR(require_dtype(q, "q", is_floating(q.dtype), "a floating dtype"));
  WEFT_RETURN_IF_ERROR(require_same_dtype(q, "q", k, "k"));
  WEFT_RETURN_IF_ERROR(require_same_dtype(q, "q", v, "v"));
  const int rank = q.shape.rank();
  auto batch = [](const Type& t) {
    return std::vector<int64_t>(t.shape.dims.begin(), t.shape.dims.end() - 2);
  };
  if (rank < 2 || k.shape.rank() != rank || v.shape.rank() != rank || batch(k) != batch(q) ||
      batch(v) != batch(q) || k.shape[rank - 1] != q.shape[rank - 1] ||
      v.shape[rank - 2] != k.shape[rank - 2]) {
    return rule_error("q " + str(q) + ", k " + str(k) + " and v " + str(v) +
                      " must be [..., Sq, D], [..., Sk, D] and [..., Sk, Dv] with the same "
                      "leading dims");
  }
  if (!std::isfinite(node.float_attr("scale"))) return rule_error("scale must be finite");
  std::vector<int64_t> scores = batch(q);
  scores.push_back(q.shape[rank - 2]);
  scores.push_back(k.shape[rank - 2]);
  if (in.size() == mask_at + 1) {
    const Type& mask = in[mask_at];
    const Shape want(scores);
    std::optional<Shape> joint = broadcast_shapes(mask.shape, want);
    if (mask.dtype != DType::boolean || !joint || *joint != want) {
      return rule_error("mask " + str(mask) + " must be bool and broadcast to the scores' shape " +
                        want.to_string() + " (true masks a key out)");
    }
  }
  std::vector<int64_t> y = batch(q);
  y.push_back(q.shape[rank - 2]);
  y.push_back(v.shape[rank - 1]);
  return Type{q.dtype, Shape(std::move(y))};
}

StatusOr<Type> attention(const Node& node, const std::vector<Type>& in) {
  return attention_type(node, in, 3);
}

// attention_grad(q, k, v, y, dy[, mask]) -> (dq, dk, dv): y and dy have the forward's
// type; the result types after dq's are q's operands' (ops.def: result k is operand k's).
StatusOr<Type> attention_grad(const Node& node, const std::vector<Type>& in) {
  if (in.size() < 5 || in.size() > 6) {
    return rule_error("takes q, k, v, y, dy and an optional mask (5 or 6 operands), but " +
                      std::to_string(in.size()) + " were given");
  }
  std::vector<Type> forward = {in[0], in[1], in[2]};
  if (in.size() == 6) forward.push_back(in[5]);
  WEFT_ASSIGN_OR_RETURN(Type y, attention_type(node, forward, 3));
  if (!(in[3] == y)) {
    return rule_error("y " + str(in[3]) + " must have the attention result's type " + str(y));
  }
  if (!(in[4] == y)) {
    return rule_error("dy " + str(in[4]) + " must have the attention result's type " + str(y));
  }
  return in[0];
}

}  // namespace

void add_nn_rules(RuleTable& t) {
  set_rule(t, Op::Matmul, matmul);
  set_rule(t, Op::Conv, conv);
  set_rule(t, Op::ConvBackwardInput, conv_backward_input);
  set_rule(t, Op::ConvBackwardWeight, conv_backward_weight);
  set_rule(t, Op::MaxPool2d, pool<false>);
  set_rule(t, Op::AvgPool2d, pool<true>);
  set_rule(t, Op::MaxPool2dBackward, max_pool2d_backward);
  set_rule(t, Op::AvgPool2dBackward, avg_pool2d_backward);
  set_rule(t, Op::MaxPool2dSelect, max_pool2d_select);
  set_rule(t, Op::Full, full);
  set_rule(t, Op::Iota, iota);
  set_rule(t, Op::RandomUniform, random_uniform);
  set_rule(t, Op::RandomBernoulli, random_bernoulli);
  set_rule(t, Op::Assign, assign);
  set_rule(t, Op::Softmax, softmax);
  set_rule(t, Op::LogSoftmax, softmax);
  set_rule(t, Op::LayerNorm, layer_norm);
  set_rule(t, Op::CrossEntropy, cross_entropy);
  set_rule(t, Op::Mse, mse);
  set_rule(t, Op::Attention, attention);
  set_rule(t, Op::AttentionGrad, attention_grad);
}

}  // namespace weft::shape_rules_internal
