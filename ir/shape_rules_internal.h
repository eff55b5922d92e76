#pragma once
// Private to the shape_rules library: the rule table type, the per-group registration
// functions (one .cc file per group of ops) and the checks the rules share. Helpers
// return an Error whose message names the offending operand type; the driver
// (`infer_node_type`) prefixes the op name and attaches the location.

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "ir/shape_rules.h"

namespace weft::shape_rules_internal {

using RuleTable = std::array<ShapeRule, kNumOps>;

inline void set_rule(RuleTable& table, Op op, ShapeRule rule) {
  table[static_cast<int>(op)] = rule;
}

// One per group; each fills the entries of its ops.
void add_elementwise_rules(RuleTable& table);  // shape_rules_elementwise.cc
void add_structural_rules(RuleTable& table);   // shape_rules_structural.cc: reduce, movement
void add_nn_rules(RuleTable& table);           // shape_rules_nn.cc: contraction, creation,
                                               // state, composites

inline Error rule_error(std::string message) { return Error{std::move(message), {}}; }

/// `f32[4,6]`.
inline std::string str(const Type& t) { return t.to_string(); }
/// `[1, 2]`, as the attribute is written in `.wir` text.
std::string str(const IntList& list);

/// Requires `t`'s dtype to satisfy `ok`; otherwise "WHAT T needs NEED".
Status require_dtype(const Type& t, std::string_view what, bool ok, std::string_view need);
bool is_signed(DType d);                       ///< floats, i32, i64
inline bool is_numeric(DType d) { return d != DType::boolean; }

/// Both operands have one dtype, else the no-implicit-promotion error.
Status require_same_dtype(const Type& a, std::string_view a_name, const Type& b,
                          std::string_view b_name);

/// NumPy broadcasting of two operand shapes, with an error naming both.
StatusOr<Shape> broadcast(const Type& a, std::string_view a_name, const Type& b,
                          std::string_view b_name);

/// Normalizes attribute `attr_name`'s axis against `t`'s rank.
StatusOr<int> normalize(int64_t axis, std::string_view attr_name, const Type& t,
                        std::string_view what);

/// Normalizes a list of axes; they must be unique.
StatusOr<std::vector<int>> normalize_unique(const IntList& axes, std::string_view attr_name,
                                            const Type& t, std::string_view what);

/// A shape attribute (`shape`, `input_shape`, ...): every entry >= 0, and the element
/// count fits in int64 (ir/checked_math.h).
StatusOr<Shape> shape_attr(const Node& node, std::string_view attr_name);

/// The list attribute must have `n` entries, each >= `min`.
StatusOr<IntList> list_attr(const Node& node, std::string_view attr_name, size_t n,
                            int64_t min);

/// The reduction mode of cross_entropy / mse: "mean", "sum" or "none".
StatusOr<std::string> reduction_attr(const Node& node);

}  // namespace weft::shape_rules_internal
