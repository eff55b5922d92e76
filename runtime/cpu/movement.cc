// Movement kernels: reshape, transpose, broadcast_to, slice, concat and pad; gather,
// one_hot and scatter_add (category Other, routed here) are in indexing.cc. Data moves as elements of the
// dtype's size, so every dtype is supported bit-exactly. Most ops are one strided block
// copy (`Block`): the loop bounds and strides are worked out and merged at bind time and
// `run` copies rows in parallel. A transpose whose innermost output axis is not
// contiguous in the input is copied in 32x32 tiles instead.

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>

#include "runtime/cpu/kernels_internal.h"

namespace weft::cpu {
namespace {

constexpr int64_t kGrainElements = 16384;
constexpr int kMaxRank = 16;  // Of a Block after simplify(); beyond it: the reference.

// out[out_base + Σ i_d·out_strides[d]] = in[in_base + Σ i_d·in_strides[d]] over `dims`.
struct Block {
  std::vector<int64_t> dims, in_strides, out_strides;
  int64_t in_base = 0, out_base = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  // Drops size-1 axes and merges axes that are contiguous in both in and out.
  void simplify() {
    if (numel() == 0) return;
    Block b;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 1) continue;
      if (!b.dims.empty() && b.in_strides.back() == in_strides[d] * dims[d] &&
          b.out_strides.back() == out_strides[d] * dims[d]) {
        b.dims.back() *= dims[d];
        b.in_strides.back() = in_strides[d];
        b.out_strides.back() = out_strides[d];
      } else {
        b.dims.push_back(dims[d]);
        b.in_strides.push_back(in_strides[d]);
        b.out_strides.push_back(out_strides[d]);
      }
    }
    dims = std::move(b.dims);
    in_strides = std::move(b.in_strides);
    out_strides = std::move(b.out_strides);
  }
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t stride = 1;
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    s[d] = stride;
    stride *= dims[d];
  }
  return s;
}

// A block reading `in_strides` from `in` into a contiguous result of shape `dims`.
Block gather_block(std::vector<int64_t> dims, std::vector<int64_t> in_strides, int64_t base) {
  Block b;
  b.out_strides = contiguous_strides(dims);
  b.dims = std::move(dims);
  b.in_strides = std::move(in_strides);
  b.in_base = base;
  b.simplify();
  return b;
}

// Copies a Block row by row (the last axis is the row), rows split over the pool.
template <typename E>
void copy_rows(ThreadPool& pool, const E* in, E* out, const Block& b) {
  const int rank = static_cast<int>(b.dims.size());
  if (b.numel() == 0) return;
  if (rank == 0) {
    out[b.out_base] = in[b.in_base];
    return;
  }
  const int64_t n = b.dims[rank - 1], si = b.in_strides[rank - 1], so = b.out_strides[rank - 1];
  if (rank == 1) {  // One row (a reshape, a concat along axis 0): split the row itself.
    pool.parallel_for(n, 4 * kGrainElements, [&](int64_t begin, int64_t end) {
      const E* s = in + b.in_base;
      E* o = out + b.out_base;
      if (si == 1 && so == 1) std::memcpy(o + begin, s + begin, static_cast<size_t>(end - begin) * sizeof(E));
      else for (int64_t i = begin; i < end; ++i) o[i * so] = s[i * si];
    });
    return;
  }
  const int64_t rows = b.numel() / n;
  pool.parallel_for(rows, std::max<int64_t>(1, kGrainElements / n), [&](int64_t begin, int64_t end) {
    int64_t idx[kMaxRank] = {}, ioff = b.in_base, ooff = b.out_base, rest = begin;
    for (int d = rank - 2; d >= 0; --d) {
      idx[d] = rest % b.dims[d];
      rest /= b.dims[d];
      ioff += idx[d] * b.in_strides[d];
      ooff += idx[d] * b.out_strides[d];
    }
    for (int64_t r = begin; r < end; ++r) {
      const E* s = in + ioff;
      E* o = out + ooff;
      if (si == 1 && so == 1) std::memcpy(o, s, static_cast<size_t>(n) * sizeof(E));
      else if (si == 0 && so == 1) std::fill(o, o + n, *s);
      else for (int64_t i = 0; i < n; ++i) o[i * so] = s[i * si];
      for (int d = rank - 2; d >= 0; --d) {
        ioff += b.in_strides[d];
        ooff += b.out_strides[d];
        if (++idx[d] < b.dims[d]) break;
        ioff -= b.in_strides[d] * b.dims[d];
        ooff -= b.out_strides[d] * b.dims[d];
        idx[d] = 0;
      }
    }
  });
}

// Copies a contiguous-output Block whose last axis is strided in `in`, in tiles over
// (the axis `a` with the smallest input stride) x (the last axis).
template <typename E>
void copy_tiled(ThreadPool& pool, const E* in, E* out, const Block& b, int a) {
  constexpr int64_t kTile = 32;
  const int rank = static_cast<int>(b.dims.size());
  const int64_t da = b.dims[a], db = b.dims[rank - 1];
  const int64_t ia = b.in_strides[a], ib = b.in_strides[rank - 1], oa = b.out_strides[a];
  const int64_t tiles_a = (da + kTile - 1) / kTile;
  const int64_t units = b.numel() / (da * db) * tiles_a;
  pool.parallel_for(units, std::max<int64_t>(1, kGrainElements / (kTile * db)),
                    [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      int64_t rest = u / tiles_a, ioff = b.in_base, ooff = b.out_base;
      for (int d = rank - 2; d >= 0; --d) {
        if (d == a) continue;
        ioff += (rest % b.dims[d]) * b.in_strides[d];
        ooff += (rest % b.dims[d]) * b.out_strides[d];
        rest /= b.dims[d];
      }
      const int64_t a0 = (u % tiles_a) * kTile, a1 = std::min(da, a0 + kTile);
      for (int64_t b0 = 0; b0 < db; b0 += kTile) {
        const int64_t b1 = std::min(db, b0 + kTile);
        for (int64_t i = a0; i < a1; ++i) {
          const E* s = in + ioff + i * ia;
          E* o = out + ooff + i * oa;
          for (int64_t j = b0; j < b1; ++j) o[j] = s[j * ib];
        }
      }
    }
  });
}

template <typename E>
std::unique_ptr<BoundKernel> block_kernel(std::string name, const void* in, void* out, Block b) {
  const E* x = static_cast<const E*>(in);
  E* y = static_cast<E*>(out);
  const int rank = static_cast<int>(b.dims.size());
  if (rank > kMaxRank) return nullptr;
  if (rank >= 2 && b.in_strides[rank - 1] > 1 && b.out_strides[rank - 1] == 1) {
    int a = 0;
    for (int d = 1; d < rank - 1; ++d) if (b.in_strides[d] < b.in_strides[a]) a = d;
    if (b.in_strides[a] < b.in_strides[rank - 1]) {
      return make_fn_kernel(name + " tiled", [=](ThreadPool& pool) -> Status {
        copy_tiled<E>(pool, x, y, b, a);
        return Status::ok_status();
      });
    }
  }
  return make_fn_kernel(name, [=](ThreadPool& pool) -> Status {
    copy_rows<E>(pool, x, y, b);
    return Status::ok_status();
  });
}

// The Block of each movement op that is a single strided copy, or nullopt.
std::optional<Block> single_block(const LibraryCall& call) {
  const Shape& in = call.operand_types[0].shape;
  const Shape& out = call.result_type.shape;
  const int rank = in.rank();
  const std::vector<int64_t> in_strides = in.strides();
  switch (call.node.op) {
    case Op::Reshape:
      return gather_block({in.numel()}, {1}, 0);
    case Op::Transpose: {
      const IntList& perm = call.node.ints_attr("perm");
      std::vector<int64_t> strides;
      for (int64_t p : perm) {
        if (p < 0 || p >= rank) return std::nullopt;
        strides.push_back(in_strides[p]);
      }
      return gather_block(out.dims, strides, 0);
    }
    case Op::BroadcastTo: {
      std::vector<int64_t> strides(out.rank(), 0);
      for (int d = 0; d < rank; ++d) {
        const int od = out.rank() - rank + d;
        strides[od] = in.dims[d] == 1 ? 0 : in_strides[d];
      }
      return gather_block(out.dims, strides, 0);
    }
    case Op::Slice: {
      const IntList& start = call.node.ints_attr("start");
      IntList step(rank, 1);
      if (call.node.has_attr("step")) step = call.node.ints_attr("step");
      std::vector<int64_t> strides(rank);
      int64_t base = 0;
      for (int d = 0; d < rank; ++d) {
        int64_t s = start[d] < 0 ? start[d] + in.dims[d] : start[d];
        s = std::clamp<int64_t>(s, 0, in.dims[d]);
        strides[d] = out.dims[d] > 1 ? in_strides[d] * step[d] : 0;
        base += out.dims[d] > 0 ? s * in_strides[d] : 0;
      }
      return gather_block(out.dims, strides, out.numel() > 0 ? base : 0);
    }
    default: return std::nullopt;
  }
}

// pad {low, high, value}, negative amounts cropping: fill, then copy the kept interior.
template <typename E>
KernelOr make_pad(const LibraryCall& call, const void* in, void* out) {
  const Shape& xs = call.operand_types[0].shape;
  const Shape& ys = call.result_type.shape;
  const IntList& low = call.node.ints_attr("low");
  Block b;
  b.in_strides = xs.strides();
  b.out_strides = ys.strides();
  for (int d = 0; d < xs.rank(); ++d) {
    const int64_t crop_low = std::max<int64_t>(0, -low[d]);
    const int64_t pad_low = std::max<int64_t>(0, low[d]);
    b.dims.push_back(std::max<int64_t>(0, std::min(xs.dims[d] - crop_low, ys.dims[d] - pad_low)));
    b.in_base += crop_low * b.in_strides[d];
    b.out_base += pad_low * b.out_strides[d];
  }
  b.simplify();
  if (static_cast<int>(b.dims.size()) > kMaxRank) return std::unique_ptr<BoundKernel>();
  const E value = static_cast<E>(dtype_bits(call.result_type.dtype, call.node.float_attr("value")));
  const E* x = static_cast<const E*>(in);
  E* y = static_cast<E*>(out);
  const int64_t n = ys.numel();
  return make_fn_kernel("pad " + call.operand_types[0].to_string(), [=](ThreadPool& pool) -> Status {
    parallel_fill(pool, y, n, value);
    copy_rows<E>(pool, x, y, b);
    return Status::ok_status();
  });
}

template <typename E>
KernelOr make_concat(const LibraryCall& call, const std::vector<const void*>& in, void* out) {
  const int axis = normalize_axis(call.node.int_attr("axis"), call.result_type.shape.rank());
  if (axis < 0) return std::unique_ptr<BoundKernel>();
  const Shape& ys = call.result_type.shape;
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= ys.dims[d];
  const int64_t out_row = outer == 0 ? 0 : ys.numel() / outer;
  std::vector<Block> blocks;
  int64_t col = 0;
  for (const Type& t : call.operand_types) {
    const int64_t row = outer == 0 ? 0 : t.numel() / outer;
    Block b;
    b.dims = {outer, row};
    b.in_strides = {row, 1};
    b.out_strides = {out_row, 1};
    b.out_base = col;
    b.simplify();
    blocks.push_back(std::move(b));
    col += row;
  }
  std::vector<const E*> srcs;
  for (const void* p : in) srcs.push_back(static_cast<const E*>(p));
  E* y = static_cast<E*>(out);
  return make_fn_kernel("concat " + ys.to_string(), [=](ThreadPool& pool) -> Status {
    for (size_t i = 0; i < blocks.size(); ++i) copy_rows<E>(pool, srcs[i], y, blocks[i]);
    return Status::ok_status();
  });
}

}  // namespace

KernelOr make_movement_kernel(const LibraryCall& call, const std::vector<const void*>& in,
                              void* out) {
  const Op op = call.node.op;
  const size_t esize = dtype_size(call.result_type.dtype);
  if (op == Op::OneHot || op == Op::Gather || op == Op::ScatterAdd) {
    return make_indexing_kernel(call, in, out);
  }
  if (call.operand_types[0].dtype != call.result_type.dtype) return std::unique_ptr<BoundKernel>();
  if (op == Op::Concat) {
    return dispatch_size(esize, [&](auto e) { return make_concat<decltype(e)>(call, in, out); });
  }
  if (op == Op::Pad) {
    return dispatch_size(esize, [&](auto e) { return make_pad<decltype(e)>(call, in[0], out); });
  }
  std::optional<Block> block = single_block(call);
  if (!block) return std::unique_ptr<BoundKernel>();
  const std::string name = std::string(op_name(op)) + " " + call.operand_types[0].to_string();
  return dispatch_size(esize, [&](auto e) -> KernelOr {
    return block_kernel<decltype(e)>(name, in[0], out, std::move(*block));
  });
}

}  // namespace weft::cpu
