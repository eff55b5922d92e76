#pragma once
// Test helper: a graph run once on a compiled target against the reference interpreter.
//
//   expect_target_matches_reference("cpu", graph, 11);

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "codegen/targets.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/testing/random_inputs.h"

namespace weft::codegen {

/// Inputs for passes/testdata/loop_exits.wir (a loop that stops, one that runs where its
/// bool[6] input %on says): random from `seed`, with %on (input 2) drawn as bools.
inline std::vector<Tensor> loop_exits_inputs(const Graph& g, uint64_t seed) {
  std::vector<Tensor> inputs = weft::testing::random_inputs(g, seed);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (int64_t i = 0; i < 6; ++i) inputs[2].set_double(i, rng() % 2);  // which slots run
  return inputs;
}

/// Runs `g` on target `name` and on the reference interpreter with random inputs from
/// `seed`; expects every output within 1e-5 (all_close).
inline void expect_target_matches_reference(const std::string& name, const Graph& g, uint64_t seed) {
  const auto inputs = weft::testing::random_inputs(g, seed);
  auto want = reference::run(g, inputs);
  ASSERT_TRUE(want.ok()) << want.error().to_string();
  auto target = find_target(name);
  ASSERT_TRUE(target.ok()) << target.error().to_string();
  auto got = (*target)->run(g, inputs);
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  ASSERT_EQ(want->outputs.size(), got->outputs.size());
  for (size_t k = 0; k < want->outputs.size(); ++k) {
    std::string why;
    EXPECT_TRUE(all_close(got->outputs[k], want->outputs[k], 1e-5, &why)) << "output " << k << ": " << why;
  }
}

}  // namespace weft::codegen
