#pragma once
// Checks shared by the `.wir` parser (ir/text.h) and the JSON importer (ir/json.h): a
// node read from a file must name a known op, have as many operands as the op takes,
// and carry only attributes from the op's schema (ops.def), each of the right kind.
// Each check returns the user-facing message, without a location (the caller knows
// where the offending token or field is), or nothing when the input is fine.

#include <optional>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace weft {

/// "unknown op 'matmull'; did you mean 'matmul'?" (the hint only when an op name is close).
std::string unknown_op_message(std::string_view name);

/// The op's operand count against `given`: "'add' takes 2 operands, but 3 were given".
std::optional<std::string> check_operand_count(const OpInfo& info, size_t given);

/// For an op with a fixed count of several results (ops.def: attention_grad's 3), the
/// count of result names against it: "'attention_grad' has 3 results (dq, dk, dv), but 1
/// was named; ...", naming the op's form; nullopt for other ops (their counts are checked
/// where their bodies are known).
std::optional<std::string> check_result_count(const OpInfo& info, size_t given);

/// The attribute name must be in the op's schema; the message lists the ones it accepts.
std::optional<std::string> check_attribute_name(const OpInfo& info, std::string_view name);

/// Checks one attribute against the op's schema: the name must be in it and the value of
/// its kind. An int where a float is expected (and an int list where floats are) is
/// accepted and widened in place, so `{value=0}` stores 0.0. A `fused` node's `kind`
/// must name a FusedKind (ir/fused_kind.h).
std::optional<std::string> check_attribute(const OpInfo& info, std::string_view name,
                                           Attribute& value);

/// The first schema attribute marked required that `attrs` lacks.
std::optional<std::string> check_required_attributes(const OpInfo& info, const Attrs& attrs);

/// An assign's target (its first operand) must be a param or state graph input.
std::optional<std::string> check_assign_target(const Graph& g, ValueId target);

}  // namespace weft
