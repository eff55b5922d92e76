#pragma once
// The kind of a `fused` node: which form of kernel its body is. One closed enum, written
// by the fusion passes and read by the memory planner, lowering and the viewers; in
// `.wir` and JSON it stays the string attribute `kind` (absent: "elementwise"):
//
//   %y = fused(%x, %b) : f32[4,5] ({ ... })                        // elementwise
//   %s = fused(%h, %x) {kind="reduction"} : f32[] ({ ... })        // ends in its one reduction
//   %o = fused(%x) {kind="row"} : f32[8,16] ({ ... })              // softmax, layer norm
//   %a = fused(%x, %w, %b) {kind="contraction"} : f32[8,32] ({ ... })  // GEMM + epilogue
//
// The kind and the body's structure always agree: the parser, the JSON importer and the
// verifier refuse an unknown kind (check_fused_kind_name), and the verifier refuses a body
// whose structure is not the one its kind names (check_fused_body):
//  - elementwise: no reduction and no contraction in the body;
//  - reduction: one reduction, which computes the body's one output;
//  - row: one or more reductions, and not the reduction form (their per-row values are
//    consumed by other nodes of the body, or there are several);
//  - contraction: the body starts with a contraction of its first two inputs, followed
//    by its epilogue (layout: passes/fuse_contraction_epilogue.h).

#include <optional>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace weft {

enum class FusedKind { elementwise, reduction, row, contraction };

/// The name written in `{kind="..."}`: "elementwise", "reduction", "row", "contraction".
std::string_view fused_kind_name(FusedKind kind);

/// The kind named `name`, or nullopt for an unknown name.
std::optional<FusedKind> parse_fused_kind(std::string_view name);

/// The message refusing an unknown kind name, or nullopt when `name` is one:
/// "unknown kind 'rows' of 'fused'; the kinds are elementwise, reduction, row, contraction".
std::optional<std::string> check_fused_kind_name(std::string_view name);

/// The kind of `fused` node `node` (its `kind` attribute; "elementwise" when absent).
/// The node must be a `fused` node whose kind is known (the verifier's checks).
FusedKind fused_kind(const Node& node);

/// Sets the kind of `fused` node `node`: elementwise leaves the attribute out (the
/// default, so the printed node has no `{kind=...}`), the others write it.
void set_fused_kind(Node& node, FusedKind kind);

/// The kind `body`'s structure has (see the top of this file), or nullopt when it has
/// none (a contraction that is not the body's first node).
std::optional<FusedKind> body_fused_kind(const Graph& body);

/// Why `fused` node `node`'s body does not have the structure its kind names, or
/// nullopt when it does (or the node has no body or an unknown kind: checked elsewhere).
std::optional<std::string> check_fused_body(const Node& node);

}  // namespace weft
