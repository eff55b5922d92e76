// Movement kernels: reshape, transpose, broadcast_to, slice, concat, pad, gather,
// one_hot, and scatter_add (gather's adjoint). Data moves as raw elements of the dtype's
// size, so every dtype (f16 and bf16 included) is supported bit-exactly.

#include <cstring>

#include "ir/checked_math.h"
#include "runtime/reference/kernels.h"

namespace weft::reference {
namespace {

using Inputs = std::vector<const Tensor*>;

Status check_shape(const Node& node, const Shape& want, const Tensor& out) {
  if (want != out.shape()) {
    return node_error(node, "result shape " + out.shape().to_string() + " should be " +
                                want.to_string());
  }
  return Status::ok_status();
}

Status check_dtype(const Node& node, const Tensor& x, const Tensor& out) {
  if (x.dtype() != out.dtype()) {
    return node_error(node, "result dtype " + std::string(dtype_name(out.dtype())) +
                                " should be " + std::string(dtype_name(x.dtype())));
  }
  return Status::ok_status();
}

// out[i] = src[base + Σ idx_d · strides[d]] over out's shape, elements of type E.
template <typename E>
void gather_strided(const void* src, int64_t base, const std::vector<int64_t>& strides,
                    Tensor& out) {
  const E* s = static_cast<const E*>(src) + base;
  E* d = static_cast<E*>(out.raw_data());
  for_each_row<1>(out.shape(), {strides},
                  [&](int64_t o, const std::array<int64_t, 1>& off,
                      const std::array<int64_t, 1>& st, int64_t n) {
                    const E* p = s + off[0];
                    if (st[0] == 1) {
                      std::memcpy(d + o, p, static_cast<size_t>(n) * sizeof(E));
                    } else {
                      for (int64_t i = 0; i < n; ++i) d[o + i] = p[i * st[0]];
                    }
                  });
}

void copy_strided(const Tensor& x, int64_t base, const std::vector<int64_t>& strides,
                  Tensor& out) {
  switch (dtype_size(x.dtype())) {
    case 1: gather_strided<uint8_t>(x.raw_data(), base, strides, out); break;
    case 2: gather_strided<uint16_t>(x.raw_data(), base, strides, out); break;
    case 4: gather_strided<uint32_t>(x.raw_data(), base, strides, out); break;
    default: gather_strided<uint64_t>(x.raw_data(), base, strides, out); break;
  }
}

Status reshape(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  WEFT_RETURN_IF_ERROR(check_dtype(node, x, out));
  if (x.numel() != out.numel()) {
    return node_error(node, "cannot reshape " + x.type().to_string() + " to " +
                                out.shape().to_string());
  }
  std::memcpy(out.raw_data(), x.raw_data(), x.bytes());
  return Status::ok_status();
}

Status transpose(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  WEFT_RETURN_IF_ERROR(check_dtype(node, x, out));
  const IntList& perm = node.ints_attr("perm");
  if (static_cast<int>(perm.size()) != x.rank()) {
    return node_error(node, "perm has " + std::to_string(perm.size()) + " entries for rank " +
                                std::to_string(x.rank()));
  }
  std::vector<bool> seen(x.rank(), false);
  std::vector<int64_t> in_strides = x.shape().strides(), strides, dims;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[p]) {
      return node_error(node, "perm " + attribute_to_string(perm) + " is not a permutation");
    }
    seen[p] = true;
    strides.push_back(in_strides[p]);
    dims.push_back(x.shape().dims[p]);
  }
  WEFT_RETURN_IF_ERROR(check_shape(node, Shape(dims), out));
  // The common 2-D case (and any transpose of the last two axes of a matrix) blocked for
  // cache locality: matmul gradients transpose weights every step.
  if (x.rank() == 2 && perm[0] == 1 && dtype_size(x.dtype()) == 4) {
    transpose_2d(x.shape().dims[0], x.shape().dims[1], static_cast<const uint32_t*>(x.raw_data()),
                 static_cast<uint32_t*>(out.raw_data()));
    return Status::ok_status();
  }
  copy_strided(x, 0, strides, out);
  return Status::ok_status();
}

Status broadcast_to(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  WEFT_RETURN_IF_ERROR(check_dtype(node, x, out));
  const Shape target(node.ints_attr("shape"));
  std::optional<Shape> b = broadcast_shapes(x.shape(), target);
  if (!b || *b != target) {
    return node_error(node, "cannot broadcast " + x.type().to_string() + " to " +
                                target.to_string());
  }
  WEFT_RETURN_IF_ERROR(check_shape(node, target, out));
  copy_strided(x, 0, broadcast_strides(x.shape(), target), out);
  return Status::ok_status();
}

Status slice(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  WEFT_RETURN_IF_ERROR(check_dtype(node, x, out));
  const IntList& start = node.ints_attr("start");
  const IntList& stop = node.ints_attr("stop");
  IntList step(x.rank(), 1);
  if (node.has_attr("step")) step = node.ints_attr("step");
  const size_t rank = static_cast<size_t>(x.rank());
  if (start.size() != rank || stop.size() != rank || step.size() != rank) {
    return node_error(node, "start, stop and step need " + std::to_string(rank) +
                                " entries each for " + x.type().to_string());
  }
  std::vector<int64_t> in_strides = x.shape().strides(), strides(rank), dims(rank);
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t dim = x.shape().dims[d];
    if (step[d] < 1) {
      return node_error(node, "step " + std::to_string(step[d]) + " on axis " +
                                  std::to_string(d) + " must be at least 1");
    }
    // Python's clamping: negative counts from the end, then clamp into [0, dim].
    auto clamp = [dim](int64_t v) {
      if (v < 0) v += dim;
      return v < 0 ? int64_t{0} : v > dim ? dim : v;
    };
    const int64_t s = clamp(start[d]), e = clamp(stop[d]);
    // As in the shape rule: (len - 1) / step + 1, since len + step - 1 overflows for a
    // huge step. The stride only matters when more than one element is taken, and then
    // step < dim, so in_strides[d] * step stays within the tensor.
    dims[d] = e > s ? (e - s - 1) / step[d] + 1 : 0;
    strides[d] = dims[d] > 1 ? in_strides[d] * step[d] : 0;
    base += s * in_strides[d];
  }
  WEFT_RETURN_IF_ERROR(check_shape(node, Shape(dims), out));
  if (out.numel() > 0) copy_strided(x, base, strides, out);
  return Status::ok_status();
}

Status concat(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& first = *in[0];
  WEFT_RETURN_IF_ERROR(check_dtype(node, first, out));
  WEFT_ASSIGN_OR_RETURN(int axis, checked_axis(node, node.int_attr("axis"), first.rank()));
  std::vector<int64_t> dims = first.shape().dims;
  dims[axis] = 0;
  for (const Tensor* t : in) {
    bool ok = t->dtype() == first.dtype() && t->rank() == first.rank();
    for (int d = 0; ok && d < first.rank(); ++d) {
      ok = d == axis || t->shape().dims[d] == first.shape().dims[d];
    }
    if (!ok) {
      return node_error(node, "cannot concatenate " + first.type().to_string() + " and " +
                                  t->type().to_string() + " along axis " + std::to_string(axis));
    }
    Checked sum = Checked(dims[axis]) + t->shape().dims[axis];
    if (!sum.ok()) {
      return node_error(node, "the sizes along axis " + std::to_string(axis) +
                                  " add up to more than int64 can hold");
    }
    dims[axis] = sum.value();
  }
  WEFT_RETURN_IF_ERROR(check_shape(node, Shape(dims), out));
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  const size_t esize = dtype_size(first.dtype());
  const size_t out_row = static_cast<size_t>(out.numel() / (outer == 0 ? 1 : outer)) * esize;
  size_t col = 0;
  for (const Tensor* t : in) {
    const size_t row = outer == 0 ? 0 : static_cast<size_t>(t->numel() / outer) * esize;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(static_cast<char*>(out.raw_data()) + o * out_row + col,
                  static_cast<const char*>(t->raw_data()) + o * row, row);
    }
    col += row;
  }
  return Status::ok_status();
}

Status pad(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  WEFT_RETURN_IF_ERROR(check_dtype(node, x, out));
  const IntList& low = node.ints_attr("low");
  const IntList& high = node.ints_attr("high");
  const int rank = x.rank();
  if (static_cast<int>(low.size()) != rank || static_cast<int>(high.size()) != rank) {
    return node_error(node, "low and high need " + std::to_string(rank) + " entries each for " +
                                x.type().to_string());
  }
  std::vector<int64_t> dims(rank);
  for (int d = 0; d < rank; ++d) {
    if (low[d] < 0 || high[d] < 0) {
      return node_error(node, "low " + attribute_to_string(low) + " and high " +
                                  attribute_to_string(high) + " must have entries >= 0");
    }
    Checked dim = Checked(low[d]) + x.shape().dims[d] + high[d];
    if (!dim.ok()) {
      return node_error(node, "low " + std::to_string(low[d]) + " and high " +
                                  std::to_string(high[d]) + " overflow int64 on axis " +
                                  std::to_string(d) + " of " + x.type().to_string());
    }
    dims[d] = dim.value();
    if (dims[d] < 0) return node_error(node, "padding leaves a negative size on axis " + std::to_string(d));
  }
  WEFT_RETURN_IF_ERROR(check_shape(node, Shape(dims), out));
  Tensor fill = Tensor::scalar(x.dtype(), node.float_attr("value"));
  const size_t esize = dtype_size(x.dtype());
  char* dst = static_cast<char*>(out.raw_data());
  const char* src = static_cast<const char*>(x.raw_data());
  std::vector<int64_t> in_strides = x.shape().strides();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t offset = 0;
    bool inside = true;
    for (int d = 0; d < rank; ++d) {
      const int64_t i = idx[d] - low[d];
      if (i < 0 || i >= x.shape().dims[d]) {
        inside = false;
        break;
      }
      offset += i * in_strides[d];
    }
    std::memcpy(dst + o * esize, inside ? src + offset * esize : fill.raw_data(), esize);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return Status::ok_status();
}

// Checks an index operand: integer dtype, 1-D.
Status check_index(const Node& node, const Tensor& idx) {
  if (!is_integer(idx.dtype()) || idx.rank() != 1) {
    return node_error(node, "indices must be a 1-D integer tensor, not " + idx.type().to_string());
  }
  return Status::ok_status();
}

Status gather(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& x = *in[0];
  const Tensor& idx = *in[1];
  WEFT_RETURN_IF_ERROR(check_dtype(node, x, out));
  WEFT_RETURN_IF_ERROR(check_index(node, idx));
  WEFT_ASSIGN_OR_RETURN(int axis, checked_axis(node, node.int_attr("axis"), x.rank()));
  std::vector<int64_t> dims = x.shape().dims;
  const int64_t dim = dims[axis];
  dims[axis] = idx.numel();
  WEFT_RETURN_IF_ERROR(check_shape(node, Shape(dims), out));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  for (int d = axis + 1; d < x.rank(); ++d) inner *= dims[d];
  const size_t esize = dtype_size(x.dtype());
  const size_t chunk = static_cast<size_t>(inner) * esize;
  for (int64_t j = 0; j < idx.numel(); ++j) {
    const int64_t i = int_element(idx, j);
    if (i < 0 || i >= dim) {
      return node_error(node, "index " + std::to_string(i) + " at position " + std::to_string(j) +
                                  " is out of range for axis " + std::to_string(axis) +
                                  " of size " + std::to_string(dim));
    }
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(static_cast<char*>(out.raw_data()) + ((o * idx.numel() + j) * inner) * esize,
                  static_cast<const char*>(x.raw_data()) + ((o * dim + i) * inner) * esize, chunk);
    }
  }
  return Status::ok_status();
}

Status one_hot(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& idx = *in[0];
  if (!is_integer(idx.dtype())) {
    return node_error(node, "indices must be integers, not " + idx.type().to_string());
  }
  const int64_t depth = node.int_attr("depth");
  std::vector<int64_t> dims = idx.shape().dims;
  dims.push_back(depth);
  WEFT_RETURN_IF_ERROR(check_shape(node, Shape(dims), out));
  for (int64_t j = 0; j < idx.numel(); ++j) {
    const int64_t i = int_element(idx, j);
    if (i >= 0 && i < depth) out.set_double(j * depth + i, 1.0);  // Others: all zeros.
  }
  return Status::ok_status();
}

Status scatter_add(const Node& node, const Inputs& in, Tensor& out) {
  const Tensor& base = *in[0];
  const Tensor& idx = *in[1];
  const Tensor& src = *in[2];
  WEFT_RETURN_IF_ERROR(check_dtype(node, base, out));
  WEFT_RETURN_IF_ERROR(check_index(node, idx));
  WEFT_ASSIGN_OR_RETURN(int axis, checked_axis(node, node.int_attr("axis"), base.rank()));
  std::vector<int64_t> src_dims = base.shape().dims;
  const int64_t dim = src_dims[axis];
  src_dims[axis] = idx.numel();
  if (src.dtype() != base.dtype() || src.shape() != Shape(src_dims)) {
    return node_error(node, "src must be " + Type{base.dtype(), Shape(src_dims)}.to_string() +
                                ", not " + src.type().to_string());
  }
  WEFT_RETURN_IF_ERROR(check_shape(node, base.shape(), out));
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= src_dims[d];
  for (int d = axis + 1; d < base.rank(); ++d) inner *= src_dims[d];
  std::memcpy(out.raw_data(), base.raw_data(), base.bytes());
  const int64_t n = idx.numel();
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = int_element(idx, j);
    if (i < 0 || i >= dim) {
      return node_error(node, "index " + std::to_string(i) + " at position " + std::to_string(j) +
                                  " is out of range for axis " + std::to_string(axis) +
                                  " of size " + std::to_string(dim));
    }
  }
  return dispatch<kFloats | kInts>(node, base.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    T* o = out.data<T>();
    const T* s = src.data<T>();
    for (int64_t a = 0; a < outer; ++a) {
      for (int64_t j = 0; j < n; ++j) {
        const int64_t i = int_element(idx, j);
        T* dst = o + (a * dim + i) * inner;
        const T* row = s + (a * n + j) * inner;
        for (int64_t k = 0; k < inner; ++k) dst[k] = static_cast<T>(dst[k] + row[k]);
      }
    }
    return Status::ok_status();
  });
}

}  // namespace

void register_movement_kernels(KernelTable& t) {
  t.add(Op::Reshape, reshape);
  t.add(Op::Transpose, transpose);
  t.add(Op::BroadcastTo, broadcast_to);
  t.add(Op::Slice, slice);
  t.add(Op::Concat, concat);
  t.add(Op::Pad, pad);
  t.add(Op::Gather, gather);
  t.add(Op::OneHot, one_hot);
  t.add(Op::ScatterAdd, scatter_add);
}

}  // namespace weft::reference
