#include "autodiff/scan_body.h"

namespace weft::grad_rules {

int BodyGradient::body_input(ValueId v) const {
  const int i = graph.input_index(v);
  return i < inputs ? i : -1;
}

int BodyGradient::seed_output(ValueId v) const {
  for (int k = 0; k < static_cast<int>(seed_of.size()); ++k) {
    if (seed_of[k] == v) return k;
  }
  return -1;
}

bool BodyGradient::is_forward(ValueId v) const {
  const int at = graph.value(v).node;
  return at >= 0 && at < forward_nodes;
}

const Node* BodyGradient::backward_node(ValueId v) const {
  const int at = graph.value(v).node;
  return at >= forward_nodes ? &graph.node(at) : nullptr;
}

}  // namespace weft::grad_rules
