#pragma once
// The verifier: structural invariants of a graph, checked on input and between passes
// (passes/pipeline.h), so that a pass that breaks the IR is caught right after it runs.
// Errors point at the offending node's location.
//
// It checks that
//  - every value id in the graph exists; graph inputs have a type; value names are
//    unique;
//  - each node has as many operands as its op takes (ops.def arity; -1: at least one)
//    and as many results as the op has, and every operand is a graph input or the
//    result of an earlier node (topological order);
//  - attributes follow the op's schema: no unknown attribute (the error lists the
//    accepted ones), each of its kind (an int where a float is expected is fine, and
//    ints where floats are), every required one present. These checks and the operand
//    count and assign-target ones are the parser's (ir/schema_check.h), so a violation
//    reads the same whether a file or a pass caused it;
//  - a `fused` node's kind names a FusedKind and its body has the structure that kind
//    names (ir/fused_kind.h: check_fused_body);
//  - each `assign` target is a param or state graph input, assigned at most once;
//  - outputs are defined values, and the declared output types (if any) match them
//    in number;
//  - with `check_types` (the default): wherever a node's operand types are known its
//    shape rule holds, and a result type, when known, equals the rule's.
//
//   Status s = verify(g);
//   if (!s.ok()) std::cerr << s.to_string();
//   // model.wir:4:3: error: 'cast' requires attribute 'dtype' (dtype)

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

struct VerifyOptions {
  /// Also run the shape rules where operand types are known and compare result types.
  bool check_types = true;
};

/// Checks `g`'s structural invariants; the first violation is returned as an Error.
Status verify(const Graph& g, const VerifyOptions& options = {});

}  // namespace weft
