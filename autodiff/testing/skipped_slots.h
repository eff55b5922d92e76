#pragma once
// The loops of autodiff/testdata/skipped_slots/*.wir (early exits whose slots that do not
// run hold a chosen `%fill`, NaN and inf included) and their inputs, shared by the tests
// that differentiate them on the reference interpreter (autodiff:skipped_slots_test) and
// on the cpu backend (codegen:loop_program_test).

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/reference/testing/random_inputs.h"
#include "runtime/tensor.h"

namespace weft::testing {

/// The graphs, by file name under autodiff/testdata/skipped_slots/.
inline const std::vector<std::string>& skipped_slot_graphs() {
  static const std::vector<std::string> names = {"active", "stop", "reverse", "nested"};
  return names;
}

/// What the skipped slots hold in the tests: a finite value, then what padding can hold.
inline const std::vector<double>& skipped_slot_fills() {
  static const std::vector<double> fills = {0.25, std::numeric_limits<double>::quiet_NaN(),
                                            std::numeric_limits<double>::infinity(),
                                            -std::numeric_limits<double>::infinity()};
  return fills;
}

/// The typed graph `name`, read from the test's runfiles.
inline StatusOr<Graph> read_skipped_slot_graph(const std::string& name) {
  StatusOr<Graph> g = read_graph_file("autodiff/testdata/skipped_slots/" + name + ".wir");
  if (!g.ok()) return g;
  if (StatusOr<bool> typed = InferTypesPass().run(*g); !typed.ok()) return typed.error();
  return g;
}

/// Seeded floats in [-1, 1); the masks fixed so that each level skips some slots and
/// runs others (%on: every other slot; %inner_on: a different pattern per outer slot);
/// %fill = `fill`.
inline std::vector<Tensor> skipped_slot_inputs(const Graph& g, double fill) {
  std::vector<Tensor> inputs = random_inputs(g, /*seed=*/7);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = g.value(g.inputs()[i].value).name;
    if (name == "fill") inputs[i].set_double(0, fill);
    if (name == "on") {
      for (int64_t k = 0; k < inputs[i].numel(); ++k) inputs[i].set_double(k, k % 2 == 0);
    }
    if (name == "inner_on") {
      const std::vector<double> pattern = {1, 0, 0, 1, 1, 1};
      for (int64_t k = 0; k < inputs[i].numel(); ++k) inputs[i].set_double(k, pattern[k % pattern.size()]);
    }
  }
  return inputs;
}

/// The names of g's parameters: what the tests differentiate with respect to.
inline std::vector<std::string> skipped_slot_params(const Graph& g) {
  std::vector<std::string> names;
  for (const Input& in : g.inputs()) {
    if (in.kind == InputKind::param) names.push_back(g.value(in.value).name);
  }
  return names;
}

}  // namespace weft::testing
