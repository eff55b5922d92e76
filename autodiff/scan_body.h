#pragma once
// Internal: a loop body and its gradient in one graph, as autodiff/scan_grad.cc builds it
// (step 2, `differentiate_body`), read by the save policy (scan_save.h) and the moved const terms
// (scan_moved_terms.h).
//
//   body:     %c (const), %h (carry), %x (an x) -> %h' = tanh(add(matmul(%x, %c), %h))
//   graph:    inputs %c %h %x, then %dh' (the seed of output 0);
//             nodes: the body's own (forward) ones, then the backward ones

#include <vector>

#include "ir/graph.h"

namespace weft::grad_rules {

/// What a body input is to the loop: its operands are the consts, the carries, the xs.
enum class Role { constant, carry, x };

/// A loop body and its gradient in one graph, as scan_grad.cc builds it: the body's
/// inputs, then a cotangent seed per body output given one; the body's own (forward)
/// nodes, then the backward nodes.
struct BodyGradient {
  const Graph& graph;
  const int consts, carries, inputs;  ///< The body's inputs: consts, carries, xs; their count.
  const int forward_nodes;            ///< How many of graph's nodes are the body's own.
  const std::vector<ValueId>& seed_of;  ///< Body output -> the input seeding its cotangent, or kNoValue.

  Role role(int i) const { return i < consts ? Role::constant : i < consts + carries ? Role::carry : Role::x; }
  /// Which body input `v` is, or -1.
  int body_input(ValueId v) const;
  /// The body output whose cotangent seed `v` is, or -1.
  int seed_output(ValueId v) const;
  /// Whether `v` is a result of one of the body's own (forward) nodes.
  bool is_forward(ValueId v) const;
  /// The backward node that makes `v`, or null.
  const Node* backward_node(ValueId v) const;
};

}  // namespace weft::grad_rules
