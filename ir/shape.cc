#include "ir/shape.h"

#include <algorithm>

#include "ir/checked_math.h"
#include "ir/status.h"

namespace weft {

int64_t Shape::numel() const {
  Checked n = 1;
  for (int64_t d : dims) n = n * d;
  // Callers measure only checked types (infer-types, parse_npy); a huge shape from a
  // file must have been refused with a user error before reaching here.
  WEFT_CHECK(n.ok(), "Shape::numel of " + to_string() +
                         " overflows int64; check the size with checked_math.h first");
  return n.value();
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> s(dims.size(), 1);
  for (int i = rank() - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

std::string Shape::to_string() const {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    dims[i] = da == 1 ? db : da;
  }
  return Shape(std::move(dims));
}

std::optional<int> normalize_axis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::string Type::to_string() const {
  return std::string(dtype_name(dtype)) + shape.to_string();
}

std::vector<int64_t> broadcast_entries(const std::vector<int64_t>& dims, const Shape& batch) {
  const int rank = batch.rank(), lead = rank - static_cast<int>(dims.size());
  std::vector<int64_t> strides(rank, 0);
  int64_t s = 1;
  for (int d = rank - 1; d >= lead; --d) {
    const int64_t size = dims[d - lead];
    strides[d] = size == 1 ? 0 : s;
    s *= size;
  }
  std::vector<int64_t> out(batch.numel());
  std::vector<int64_t> index(rank, 0);
  for (int64_t e = 0; e < static_cast<int64_t>(out.size()); ++e) {
    int64_t off = 0;
    for (int d = 0; d < rank; ++d) off += index[d] * strides[d];
    out[e] = off;
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace weft
