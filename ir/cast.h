#pragma once
// Cast nodes, built one way wherever weft emits them.
//
//   ValueId i = cast_to(e, x, DType::i64);   // through a builder: x itself if it is i64
//   ValueId b = add_cast(g, h, DType::bf16, n.loc);   // a pass appending to a graph
//
// A builder (frontend's Emitter, which the ONNX converters also write through, and
// autodiff's GradBuilder) types and locates the node itself; a pass that edits a Graph
// directly gives the location and, where names matter, the name.

#include <string>
#include <utility>

#include "ir/graph.h"

namespace weft {

/// `v` as `dtype` through builder `b` (anything with `type(v)` and `op(op, operands,
/// attrs)`: frontend's Emitter, autodiff's GradBuilder): `v` itself when it already has
/// that dtype, else a new cast node.
template <class Builder>
ValueId cast_to(Builder& b, ValueId v, DType dtype) {
  return b.type(v).dtype == dtype ? v : b.op(Op::Cast, {v}, {{"dtype", dtype}});
}

/// Appends to `g` a node casting `v` to `to` (typed: `to`, v's shape) at `loc`, named
/// `name` (empty: a fresh name). It casts even when `v` already has dtype `to`.
inline ValueId add_cast(Graph& g, ValueId v, DType to, Location loc, std::string name = "") {
  return g.add_node(Op::Cast, {v}, {{"dtype", to}}, std::move(loc), Type{to, g.type(v).shape}, std::move(name));
}

}  // namespace weft
