// Reduction kernels: sum, mean, max, min over a set of axes, and argmax over one axis.

#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/reference/kernels.h"

namespace weft::reference {
namespace {

using Inputs = std::vector<const Tensor*>;

enum class Reduce { kSum, kMean, kMax, kMin };

// The reduced axes as a mask, from the optional `axes` attribute (absent: all axes).
StatusOr<std::vector<bool>> reduced_axes(const Node& node, int rank) {
  std::vector<bool> mask(rank, !node.has_attr("axes"));
  if (node.has_attr("axes")) {
    for (int64_t a : node.ints_attr("axes")) {
      WEFT_ASSIGN_OR_RETURN(int axis, checked_axis(node, a, rank));
      if (mask[axis]) return node_error(node, "axis " + std::to_string(a) + " is listed twice");
      mask[axis] = true;
    }
  }
  return mask;
}

// Strides of the output, laid out over the input's dims (0 on reduced axes), after
// checking that `out` has the shape the reduction produces.
StatusOr<std::vector<int64_t>> output_strides(const Node& node, const Shape& in,
                                              const std::vector<bool>& mask,
                                              bool keepdims, const Shape& out) {
  std::vector<int64_t> kept;
  for (int d = 0; d < in.rank(); ++d) {
    if (!mask[d]) kept.push_back(in.dims[d]);
    else if (keepdims) kept.push_back(1);
  }
  if (Shape(kept) != out) {
    return node_error(node, "result shape " + out.to_string() + " should be " +
                                Shape(kept).to_string());
  }
  std::vector<int64_t> keep_shape;
  for (int d = 0; d < in.rank(); ++d) keep_shape.push_back(mask[d] ? 1 : in.dims[d]);
  std::vector<int64_t> strides = Shape(keep_shape).strides();
  for (int d = 0; d < in.rank(); ++d) {
    if (mask[d]) strides[d] = 0;
  }
  return strides;
}

template <Reduce R>
Status reduce(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  if (x.dtype() != out.dtype()) {
    return node_error(node, "result dtype " + std::string(dtype_name(out.dtype())) +
                                " should be " + std::string(dtype_name(x.dtype())));
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<bool> mask, reduced_axes(node, x.rank()));
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> ostrides,
                        output_strides(node, x.shape(), mask, node.bool_attr("keepdims"),
                                       out.shape()));
  const int64_t count = out.numel() == 0 ? 0 : x.numel() / out.numel();
  if ((R == Reduce::kMax || R == Reduce::kMin) && count == 0 && out.numel() > 0) {
    return node_error(node, "reduction over an empty axis of " + x.type().to_string());
  }
  constexpr unsigned kinds = R == Reduce::kMean  ? kFloats
                            : R == Reduce::kSum ? (kFloats | kInts)
                                                : (kFloats | kInts | kBool);
  return dispatch<kinds>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    // Float sums accumulate in f64, integer sums in (wrapping) 64 bits.
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    if constexpr (R == Reduce::kSum || R == Reduce::kMean) {
      std::vector<Acc> acc(static_cast<size_t>(out.numel()), Acc{0});
      for_each_row<1>(x.shape(), {ostrides},
                      [&](int64_t start, const std::array<int64_t, 1>& off,
                          const std::array<int64_t, 1>& st, int64_t n) {
                        Acc* a = acc.data() + off[0];
                        const T* s = src + start;
                        if (st[0] == 0) {
                          Acc sum = 0;
                          for (int64_t i = 0; i < n; ++i) sum += static_cast<Acc>(s[i]);
                          *a += sum;
                        } else {
                          for (int64_t i = 0; i < n; ++i) a[i * st[0]] += static_cast<Acc>(s[i]);
                        }
                      });
      for (int64_t i = 0; i < out.numel(); ++i) {
        if constexpr (R == Reduce::kMean) {
          dst[i] = static_cast<T>(acc[i] / static_cast<double>(count));
        } else {
          dst[i] = static_cast<T>(acc[i]);
        }
      }
    } else {
      constexpr bool is_max = R == Reduce::kMax;
      const T init = is_max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
      // Accumulates in place in the result (std::vector<bool> has no references).
      T* acc = dst;
      for (int64_t i = 0; i < out.numel(); ++i) acc[i] = init;
      if constexpr (std::is_floating_point_v<T>) {
        for (int64_t i = 0; i < out.numel(); ++i) {
          acc[i] = is_max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
        }
      }
      for_each_row<1>(x.shape(), {ostrides},
                      [&](int64_t start, const std::array<int64_t, 1>& off,
                          const std::array<int64_t, 1>& st, int64_t n) {
                        for (int64_t i = 0; i < n; ++i) {
                          T& a = acc[off[0] + i * st[0]];
                          const T v = src[start + i];
                          if constexpr (std::is_floating_point_v<T>) {
                            if (std::isnan(a)) continue;
                            if (std::isnan(v)) {
                              a = v;
                              continue;
                            }
                          }
                          if (is_max ? v > a : v < a) a = v;
                        }
                      });
    }
    return Status::ok_status();
  });
}

Status argmax(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  if (out.dtype() != DType::i64) return node_error(node, "result dtype must be i64");
  WEFT_ASSIGN_OR_RETURN(int axis, checked_axis(node, node.int_attr("axis"), x.rank()));
  std::vector<bool> mask(x.rank(), false);
  mask[axis] = true;
  WEFT_ASSIGN_OR_RETURN(std::vector<int64_t> unused,
                        output_strides(node, x.shape(), mask, node.bool_attr("keepdims"),
                                       out.shape()));
  (void)unused;
  const int64_t dim = x.shape().dims[axis];
  if (dim == 0 && out.numel() > 0) {
    return node_error(node, "argmax over an empty axis of " + x.type().to_string());
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.shape().dims[d];
  for (int d = axis + 1; d < x.rank(); ++d) inner *= x.shape().dims[d];
  return dispatch<kFloats | kInts>(node, x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* src = x.data<T>();
    int64_t* dst = out.data<int64_t>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = src + o * dim * inner + i;
        int64_t best = 0;
        for (int64_t j = 1; j < dim; ++j) {
          const T v = p[j * inner], b = p[best * inner];
          if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(b)) break;  // The first NaN is the maximum.
            if (std::isnan(v)) {
              best = j;
              break;
            }
          }
          if (v > b) best = j;
        }
        dst[o * inner + i] = best;
      }
    }
    return Status::ok_status();
  });
}

}  // namespace

void register_reduction_kernels(KernelTable& t) {
  t.add(Op::Sum, reduce<Reduce::kSum>);
  t.add(Op::Mean, reduce<Reduce::kMean>);
  t.add(Op::Max, reduce<Reduce::kMax>);
  t.add(Op::Min, reduce<Reduce::kMin>);
  t.add(Op::Argmax, argmax);
}

}  // namespace weft::reference
