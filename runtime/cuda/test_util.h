#pragma once
// What runtime/cuda's tests share.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"

namespace weft::cuda::test_util {

/// Values in [-1, 1) from a linear congruential generator seeded by `seed`.
inline Tensor random_tensor(Type type, uint32_t seed) {
  Tensor t(type);
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.set_double(i, static_cast<double>(s >> 8) / (1 << 24) * 2.0 - 1.0);
  }
  return t;
}

/// random_tensor rounded to multiples of 1/4 (many ties) and, with `nans`, a NaN in
/// about one element in eleven: the pooling kernels' first-maximum and NaN rules decide
/// many windows.
inline Tensor tied_tensor(Type type, uint32_t seed, bool nans) {
  Tensor t = random_tensor(type, seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = std::round(t.get_double(i) * 4) / 4;
    t.set_double(i, nans && (i * 7 + seed) % 11 == 3 ? std::nan("") : v);
  }
  return t;
}

/// `node`'s op and attributes on the reference interpreter, applied to `args`, giving a
/// value of type `result`; a reference error aborts (the tests give valid ops).
inline Tensor reference_node(const Node& node, const std::vector<Tensor>& args,
                             const Type& result) {
  Graph graph("reference");
  std::vector<ValueId> in;
  for (size_t i = 0; i < args.size(); ++i) {
    in.push_back(graph.add_input("in" + std::to_string(i), args[i].type()));
  }
  graph.add_output(graph.add_node(node.op, in, node.attrs, {}, result));
  StatusOr<reference::RunResult> r = reference::run(graph, args);
  WEFT_CHECK(r.ok(), r.ok() ? "" : r.status().to_string());
  return r->outputs[0];
}

}  // namespace weft::cuda::test_util
