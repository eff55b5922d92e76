#pragma once
// Internal to codegen/: one run of a bound executor (runtime/cpu or runtime/cuda) with the
// reference interpreter's calling convention — what run_on_cpu and run_on_cuda return.

#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/reference/interpreter.h"

namespace weft::codegen {

/// The error both run_on_* give for a wrong number of inputs, or ok.
inline Status check_input_count(const Graph& g, const std::vector<Tensor>& inputs) {
  if (inputs.size() == g.inputs().size()) return Status::ok_status();
  return Error{"graph @" + g.name() + " takes " + std::to_string(g.inputs().size()) +
               " inputs, got " + std::to_string(inputs.size())};
}

/// Sets `inputs`, runs one step of `ex` (compiled from `g`) and collects the outputs and
/// every assigned input's new value.
template <class Executor>
StatusOr<reference::RunResult> run_once(Executor& ex, const Graph& g,
                                        const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    WEFT_RETURN_IF_ERROR(ex.set_input(static_cast<int>(i), inputs[i]));
  }
  WEFT_RETURN_IF_ERROR(ex.run());
  reference::RunResult r;
  for (int i = 0; i < ex.num_outputs(); ++i) r.outputs.push_back(ex.output(i));
  // Assigned inputs, from the graph: updates written in place have no Update entry.
  std::vector<bool> updated(inputs.size(), false);
  for (const Node& n : g.nodes()) {
    if (n.op == Op::Assign) updated[g.input_index(n.operands[0])] = true;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (updated[i]) r.updated.emplace_back(ex.program().inputs[i].name, ex.input(static_cast<int>(i)));
  }
  return r;
}

}  // namespace weft::codegen
