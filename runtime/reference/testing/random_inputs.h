#pragma once
// Test helper: a value for every input of a typed graph, floats uniform in [lo, hi) from a
// fixed seed, integers and booleans zero.

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace weft::testing {

std::vector<Tensor> random_inputs(const Graph& g, uint64_t seed, double lo = -1, double hi = 1);

}  // namespace weft::testing
