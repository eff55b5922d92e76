#pragma once
// Test helper for passes that rewrite a training step: the step before and after the
// pass, run on the reference interpreter with the same random inputs, must give the same
// loss and updated values bit for bit.
//
//   Graph after = trainer->step_graph();
//   ASSERT_TRUE(pass.run(after).ok());
//   expect_same_step(trainer->step_graph(), after);

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ir/graph.h"
#include "runtime/reference/interpreter.h"

namespace weft {

/// Random inputs for step graph `g`: floats uniform in [-1, 1], the step count 3, other
/// integers (class indices) below 5.
inline std::vector<Tensor> random_step_inputs(const Graph& g) {
  std::mt19937 rng(7);
  std::vector<Tensor> inputs;
  for (const Input& in : g.inputs()) {
    Tensor t(g.type(in.value));
    const std::string& name = g.value(in.value).name;
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (is_floating(t.dtype())) t.set_double(i, std::uniform_real_distribution<>(-1, 1)(rng));
      else if (name == "weft.step") t.set_double(i, 3);
      else t.set_double(i, static_cast<double>(rng() % 5));
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

/// Expects `before` and `after` to compute the same loss and updated values, bit for bit,
/// on the reference interpreter.
inline void expect_same_step(const Graph& before, const Graph& after) {
  const std::vector<Tensor> inputs = random_step_inputs(before);
  auto a = reference::run(before, inputs);
  auto b = reference::run(after, inputs);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->outputs[0], b->outputs[0]);
  ASSERT_EQ(a->updated.size(), b->updated.size());
  for (size_t i = 0; i < a->updated.size(); ++i) {
    EXPECT_EQ(a->updated[i].second, b->updated[i].second) << a->updated[i].first;
  }
}

}  // namespace weft
