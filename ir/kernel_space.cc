// A fused kernel body's iteration space (declared in kernel_space.h).

#include "ir/kernel_space.h"

#include <utility>

namespace weft {
namespace {

/// An operand of shape `in` laid out with `strides`: its element stride along each
/// output dimension (0 where it is broadcast).
std::vector<int64_t> broadcast_strides(const Shape& in, const std::vector<int64_t>& strides,
                                       const Shape& out) {
  std::vector<int64_t> st(out.rank(), 0);
  for (int d = 0; d < out.rank(); ++d) {
    const int id = d - (out.rank() - in.rank());
    if (id >= 0 && in[id] != 1) st[d] = strides[id];
  }
  return st;
}

/// Body input k as the kernel reads it: its element strides along `out` and the element
/// it starts at (a window's first element in its source; else 0).
std::pair<std::vector<int64_t>, int64_t> operand_layout(const Graph& body, size_t k, const Shape& out) {
  const Shape& source = body.type(body.inputs()[k].value).shape;
  const std::vector<int64_t> strides = source.strides();
  const Node* window = input_window(body, k);
  if (window == nullptr) return {broadcast_strides(source, strides, out), 0};
  int64_t offset = 0;
  const IntList& start = window->ints_attr("start");
  for (int d = 0; d < source.rank(); ++d) offset += start[d] * strides[d];
  return {broadcast_strides(body.type(window->result()).shape, strides, out), offset};
}

}  // namespace

const Node* input_window(const Graph& body, size_t k) {
  const ValueId v = body.inputs()[k].value;
  const Node* window = nullptr;
  int uses = 0;
  for (const Node& n : body.nodes()) {
    for (ValueId o : n.operands) {
      if (o != v) continue;
      ++uses;
      window = &n;
    }
  }
  for (ValueId out : body.outputs()) uses += out == v;
  if (uses != 1 || window == nullptr || window->op != Op::Slice) return nullptr;
  if (const Attribute* step = window->attr("step")) {
    for (int64_t s : std::get<IntList>(*step)) {
      if (s != 1) return nullptr;
    }
  }
  return window;
}

const Node* output_window(const Graph& body, size_t o) {
  const int p = body.value(body.outputs()[o]).node;
  return p >= 0 && body.node(p).op == Op::Pad ? &body.node(p) : nullptr;
}

int64_t CollapsedSpace::rows() const {
  int64_t r = 1;
  for (size_t j = 0; j + 1 < dims.size(); ++j) r *= dims[j];
  return r;
}

CollapsedSpace merge_dims(const Graph& body, const Shape& out, const std::vector<bool>& kind,
                          std::vector<bool>* kinds_out) {
  std::vector<std::vector<int64_t>> full;
  CollapsedSpace s;
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    auto [strides, offset] = operand_layout(body, k, out);
    full.push_back(std::move(strides));
    s.offsets.push_back(offset);
  }
  // Results stored through windows: their destinations' strides, merged like operands'.
  std::vector<std::vector<int64_t>> full_out(body.outputs().size());
  s.out_offsets.assign(body.outputs().size(), 0);
  for (size_t o = 0; o < body.outputs().size(); ++o) {
    const Node* window = output_window(body, o);
    if (window == nullptr) continue;
    const Shape& dest = body.type(window->result()).shape;
    const std::vector<int64_t> strides = dest.strides();
    full_out[o] = broadcast_strides(body.type(window->operands[0]).shape, strides, out);
    const IntList& low = window->ints_attr("low");
    for (int d = 0; d < dest.rank(); ++d) s.out_offsets[o] += low[d] * strides[d];
  }
  s.strides.resize(full.size());
  s.out_strides.resize(full_out.size());
  for (int d = 0; d < out.rank(); ++d) {
    if (out[d] == 1) continue;
    const bool k = !kind.empty() && kind[d];
    bool merge = !s.dims.empty() && (kinds_out == nullptr || kinds_out->back() == k);
    for (size_t j = 0; j < full.size() && merge; ++j) {
      merge = s.strides[j].back() == full[j][d] * out[d];
    }
    for (size_t o = 0; o < full_out.size() && merge; ++o) {
      merge = full_out[o].empty() || s.out_strides[o].back() == full_out[o][d] * out[d];
    }
    if (merge) {
      s.dims.back() *= out[d];
      for (size_t j = 0; j < full.size(); ++j) s.strides[j].back() = full[j][d];
      for (size_t o = 0; o < full_out.size(); ++o) {
        if (!full_out[o].empty()) s.out_strides[o].back() = full_out[o][d];
      }
    } else {
      s.dims.push_back(out[d]);
      if (kinds_out != nullptr) kinds_out->push_back(k);
      for (size_t j = 0; j < full.size(); ++j) s.strides[j].push_back(full[j][d]);
      for (size_t o = 0; o < full_out.size(); ++o) {
        if (!full_out[o].empty()) s.out_strides[o].push_back(full_out[o][d]);
      }
    }
  }
  return s;
}

CollapsedSpace collapse_space(const Graph& body) {
  const Node* window = output_window(body, 0);
  const Shape& out = body.type(window ? window->operands[0] : body.outputs()[0]).shape;
  CollapsedSpace s = merge_dims(body, out, {}, nullptr);
  if (s.dims.empty()) {  // Rank 0, or every dimension is 1.
    s.dims.push_back(1);
    for (auto& st : s.strides) st.push_back(0);
    for (size_t o = 0; o < s.out_strides.size(); ++o) {
      if (output_window(body, o) != nullptr) s.out_strides[o].push_back(0);
    }
  }
  // A long row (an all-contiguous body collapses to one) is cut into rows of `c`
  // elements, c a divisor of it, so the runtime can split the rows over its threads.
  // Each operand's row stride is 0 or 1, so it becomes (0 or c, then 0 or 1).
  const int64_t n = s.dims.back();
  constexpr int64_t kLongRow = 16384;
  if (n > kLongRow) {
    int64_t c = 0;
    for (int64_t d = 4096; d >= 256 && c == 0; d -= 16) {
      if (n % d == 0) c = d;
    }
    for (int64_t d = 4096; d >= 256 && c == 0; --d) {
      if (n % d == 0) c = d;
    }
    if (c > 0) {
      s.dims.back() = n / c;
      s.dims.push_back(c);
      for (auto* list : {&s.strides, &s.out_strides}) {
        for (auto& st : *list) {
          if (st.empty()) continue;  // a result stored row-major
          const int64_t inner = st.back();
          st.back() = inner * c;
          st.push_back(inner);
        }
      }
    }
  }
  return s;
}

}  // namespace weft
