#include "ir/schema_check.h"

#include <algorithm>
#include <vector>

#include "ir/fused_kind.h"

namespace weft {
namespace {

// Levenshtein distance, for "did you mean" hints.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

std::string kind_with_article(AttrKind kind) {
  switch (kind) {
    case AttrKind::Int: return "an int";
    case AttrKind::Float: return "a float";
    case AttrKind::Str: return "a string";
    case AttrKind::Bool: return "a bool";
    case AttrKind::DType: return "a dtype";
    case AttrKind::Ints: return "an int list";
    case AttrKind::Floats: return "a float list";
  }
  return "?";
}

}  // namespace

std::string unknown_op_message(std::string_view name) {
  std::string message = "unknown op " + quoted(name);
  std::string_view best;
  size_t best_distance = 3;  // Suggest only names within two edits.
  for (Op op : all_ops()) {
    size_t d = edit_distance(name, op_name(op));
    if (d < best_distance && d < std::max<size_t>(name.size(), 2)) {
      best_distance = d;
      best = op_name(op);
    }
  }
  if (!best.empty()) message += "; did you mean " + quoted(best) + "?";
  return message;
}

std::optional<std::string> check_operand_count(const OpInfo& info, size_t given) {
  if (info.arity < 0) {
    if (given >= 1) return std::nullopt;
    return quoted(info.name) + " takes at least 1 operand, but none were given";
  }
  if (given == static_cast<size_t>(info.arity)) return std::nullopt;
  std::string expected = std::to_string(info.arity) + (info.arity == 1 ? " operand" : " operands");
  std::string were = given == 1 ? " was given" : " were given";
  return quoted(info.name) + " takes " + expected + ", but " + std::to_string(given) + were;
}

std::optional<std::string> check_result_count(const OpInfo& info, size_t given) {
  if (info.results <= 1 || given == static_cast<size_t>(info.results)) return std::nullopt;
  std::string message = quoted(info.name) + " has " + std::to_string(info.results) +
                        " results, but " + std::to_string(given) +
                        (given == 1 ? " was named" : " were named");
  if (info.op == Op::AttentionGrad) {
    // The one-result form with `wrt` (before issue #31) is what old files hold.
    message += "; write '%dq, %dk, %dv = attention_grad(%q, %k, %v, %y, %dy[, %mask]) "
               "{scale=..., causal=...}' (y: attention's result, dy: its cotangent); the "
               "former one-result form with 'wrt' is gone";
  }
  return message;
}

std::optional<std::string> check_attribute_name(const OpInfo& info, std::string_view name) {
  if (info.find_attr(name) == nullptr) {
    if (info.attrs.empty()) {
      return quoted(info.name) + " takes no attributes, but " + quoted(name) + " was given";
    }
    std::string accepted;
    for (const AttrSpec& s : info.attrs) {
      accepted += (accepted.empty() ? "" : ", ") + std::string(s.name);
    }
    return quoted(info.name) + " has no attribute " + quoted(name) + "; it accepts " + accepted;
  }
  return std::nullopt;
}

std::optional<std::string> check_attribute(const OpInfo& info, std::string_view name,
                                           Attribute& value) {
  if (auto message = check_attribute_name(info, name)) return message;
  const AttrSpec* spec = info.find_attr(name);
  AttrKind kind = attr_kind(value);
  if (spec->kind == AttrKind::Float && kind == AttrKind::Int) {
    value = static_cast<double>(std::get<int64_t>(value));
  } else if (spec->kind == AttrKind::Floats && kind == AttrKind::Ints) {
    const IntList& ints = std::get<IntList>(value);
    value = FloatList(ints.begin(), ints.end());
  } else if (spec->kind != kind) {
    return "attribute " + quoted(name) + " of " + quoted(info.name) + " must be " +
           kind_with_article(spec->kind) + ", but " + attribute_to_string(value) + " is " +
           kind_with_article(kind);
  }
  if (info.op == Op::Fused && name == "kind") {
    return check_fused_kind_name(std::get<std::string>(value));
  }
  return std::nullopt;
}

std::optional<std::string> check_required_attributes(const OpInfo& info, const Attrs& attrs) {
  for (const AttrSpec& spec : info.attrs) {
    if (spec.required && !attrs.count(std::string(spec.name))) {
      return quoted(info.name) + " requires attribute " + quoted(spec.name) + " (" +
             std::string(attr_kind_name(spec.kind)) + ")";
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_assign_target(const Graph& g, ValueId target) {
  const Value& v = g.value(target);
  int input = g.input_index(target);
  if (input >= 0 && g.inputs()[input].kind != InputKind::data) return std::nullopt;
  std::string what = input >= 0  ? "a data input"
                     : v.node >= 0 ? "the result of " + quoted(op_name(g.node(v.node).op))
                                   : "not a graph input";
  return "'assign' target '%" + v.name + "' must be a param or state input, but it is " + what;
}

}  // namespace weft
