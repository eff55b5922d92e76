#pragma once
// Test helper: the cases of tests/fixtures/cases.json (made independently with NumPy and
// PyTorch by tests/fixtures/make_fixtures.py), each as one single-node graph typed by the
// shape rules, with its inputs and the expected result. fixtures_test runs them on the
// reference interpreter; codegen:kernel_coverage_test runs them on every backend.
//
//   StatusOr<std::vector<FixtureEntry>> entries = load_fixture_cases();
//   for (const FixtureEntry& e : *entries) {
//     if (!e.built.ok()) continue;                    // e.built.error(): why not
//     const FixtureCase& c = *e.built;
//     StatusOr<reference::RunResult> r = reference::run(c.graph, c.inputs);
//     all_close(case_result(*r, c), c.want, c.tol, &why);
//   }

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"

namespace weft::testing {

/// One fixture case as a graph: inputs in0, in1, ... (assign's in0 is state), one node of
/// `op` at "NAME.wir:1:1", and its result as the graph's output (assign has none: its
/// update is the result).
struct FixtureCase {
  std::string name;
  Op op = Op::Add;
  Graph graph;
  std::vector<Tensor> inputs;  ///< In graph-input order.
  Tensor want;                 ///< What NumPy/PyTorch computed.
  double tol = 0;              ///< all_close tolerance for `want`.
  size_t result = 0;           ///< Which of the node's results `want` is (manifest "result").
};

/// A manifest entry: its name and op as spelled there, and the case, or why it could not
/// be built (an unknown op, a bad attribute, a missing file, a shape rule that refuses it
/// or disagrees with NumPy's result type).
struct FixtureEntry {
  std::string name;
  std::string op;
  StatusOr<FixtureCase> built;
};

/// Every case of tests/fixtures/cases.json, read from the test's runfiles root (Bazel runs
/// tests there; the fixtures keep their tree paths). Error: the manifest cannot be read.
StatusOr<std::vector<FixtureEntry>> load_fixture_cases();

/// The graph `name` of one `op` node with attributes `attrs` on inputs of `types` (in0,
/// in1, ...; assign's first is state), typed by the shape rules, at `loc`; the node's
/// result `result` is the output (assign: none; attention_grad has three). Error: the
/// shape rule's, prefixed "shape rule: ".
StatusOr<Graph> one_node_graph(const std::string& name, Op op, const Attrs& attrs,
                               const std::vector<Type>& types, const Location& loc,
                               size_t result = 0);

/// Case `c` with its inputs and dtype attributes of dtype `from` made `to` (values
/// converted as Tensor::set_double does), named "NAME from->to", or nullopt when none is
/// `from` or the shape rule refuses the change. Its `want` and `tol` stay the original's.
std::optional<FixtureCase> retyped_case(const FixtureCase& c, DType from, DType to);

/// What case `c` computed in run result `r`: its output, or assign's updated state.
const Tensor& case_result(const reference::RunResult& r, const FixtureCase& c);

}  // namespace weft::testing
