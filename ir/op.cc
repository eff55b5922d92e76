#include "ir/op.h"

#include <iterator>
#include <string>
#include <unordered_map>

#include "ir/status.h"

namespace weft {
namespace {

// Parses an ops.def schema string such as "axes:ints? keepdims:bool=false".
std::vector<AttrSpec> parse_schema(std::string_view op, std::string_view schema) {
  std::vector<AttrSpec> specs;
  size_t pos = 0;
  while (pos < schema.size()) {
    while (pos < schema.size() && schema[pos] == ' ') ++pos;
    if (pos >= schema.size()) break;
    // A default may contain spaces only inside [...] or "..."; split on top-level spaces.
    size_t end = pos;
    int depth = 0;
    bool in_str = false;
    while (end < schema.size() && (schema[end] != ' ' || depth > 0 || in_str)) {
      if (schema[end] == '"') in_str = !in_str;
      if (!in_str && schema[end] == '[') ++depth;
      if (!in_str && schema[end] == ']') --depth;
      ++end;
    }
    std::string_view entry = schema.substr(pos, end - pos);
    pos = end;
    size_t colon = entry.find(':');
    WEFT_CHECK(colon != std::string_view::npos, std::string(op) + ": bad schema entry");
    AttrSpec spec;
    spec.name = entry.substr(0, colon);
    std::string_view rest = entry.substr(colon + 1);
    size_t eq = rest.find('=');
    std::string_view kind = rest.substr(0, eq);
    bool optional = false;
    if (!kind.empty() && kind.back() == '?') {
      optional = true;
      kind.remove_suffix(1);
    }
    auto k = parse_attr_kind(kind);
    WEFT_CHECK(k.has_value(), std::string(op) + ": unknown attribute kind " + std::string(kind));
    spec.kind = *k;
    if (eq != std::string_view::npos) {
      auto v = parse_attribute_literal(rest.substr(eq + 1));
      WEFT_CHECK(v.has_value(), std::string(op) + ": bad default in schema");
      // An integer default for a float attribute ("value:float=0") is widened.
      if (spec.kind == AttrKind::Float && attr_kind(*v) == AttrKind::Int) {
        v = Attribute(static_cast<double>(std::get<int64_t>(*v)));
      }
      WEFT_CHECK(attr_kind(*v) == spec.kind, std::string(op) + ": default of wrong kind");
      spec.default_ = *v;
    } else {
      spec.required = !optional;
    }
    specs.push_back(spec);
  }
  return specs;
}

// ops.def's autocast table: one entry per op, in the ops' order, checked here.
struct AutocastEntry {
  Op op;
  AutocastClass autocast;
  HalfRule half;
};
constexpr AutocastEntry kAutocast[] = {
#define WEFT_OP(...)
#define WEFT_AUTOCAST(id, autocast, half) {Op::id, AutocastClass::autocast, HalfRule::half},
#include "ir/ops.def"
#undef WEFT_AUTOCAST
#undef WEFT_OP
};
static_assert(std::size(kAutocast) == kNumOps,
              "ops.def's autocast table needs exactly one entry per op");
constexpr bool autocast_in_op_order() {
  for (size_t i = 0; i < std::size(kAutocast); ++i) {
    if (static_cast<size_t>(kAutocast[i].op) != i) return false;
  }
  return true;
}
static_assert(autocast_in_op_order(), "ops.def's autocast table lists the ops in their order");

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> table;
#define WEFT_OP(id, name, arity, results, category, schema, math)                   \
  table.push_back(OpInfo{Op::id, name, arity, results, OpCategory::category,         \
                         parse_schema(name, schema), MathClass::math});
#include "ir/ops.def"
#undef WEFT_OP
  for (OpInfo& info : table) {
    info.autocast = kAutocast[static_cast<size_t>(info.op)].autocast;
    info.half = kAutocast[static_cast<size_t>(info.op)].half;
  }
  return table;
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> t = build_table();
  return t;
}

}  // namespace

const AttrSpec* OpInfo::find_attr(std::string_view attr_name) const {
  for (const AttrSpec& s : attrs) {
    if (s.name == attr_name) return &s;
  }
  return nullptr;
}

const OpInfo& op_info(Op op) { return table()[static_cast<int>(op)]; }

std::optional<Op> parse_op(std::string_view name) {
  static const auto* by_name = [] {
    auto* m = new std::unordered_map<std::string_view, Op>();
    for (const OpInfo& info : table()) (*m)[info.name] = info.op;
    // The names of the convolutions before they took any number of spatial dims, so
    // `.wir` and JSON files written then still load (they print under the new names).
    (*m)["conv2d"] = Op::Conv;
    (*m)["conv2d_backward_input"] = Op::ConvBackwardInput;
    (*m)["conv2d_backward_weight"] = Op::ConvBackwardWeight;
    return m;
  }();
  auto it = by_name->find(name);
  if (it == by_name->end()) return std::nullopt;
  return it->second;
}

std::string_view category_name(OpCategory category) {
  switch (category) {
    case OpCategory::Elementwise: return "elementwise";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::Movement: return "movement";
    case OpCategory::Contraction: return "contraction";
    case OpCategory::Creation: return "creation";
    case OpCategory::State: return "state";
    case OpCategory::Composite: return "composite";
    case OpCategory::Other: return "other";
  }
  return "?";
}

std::string_view math_class_name(MathClass math) {
  switch (math) {
    case MathClass::None: return "none";
    case MathClass::Signed: return "signed";
    case MathClass::Numeric: return "numeric";
    case MathClass::Algebraic: return "algebraic";
    case MathClass::Transcendental: return "transcendental";
    case MathClass::Arithmetic: return "arithmetic";
    case MathClass::Division: return "division";
    case MathClass::Power: return "power";
    case MathClass::Comparison: return "comparison";
    case MathClass::Logical: return "logical";
    case MathClass::Select: return "select";
    case MathClass::Cast: return "cast";
  }
  return "?";
}

std::string_view autocast_class_name(AutocastClass autocast) {
  switch (autocast) {
    case AutocastClass::None: return "none";
    case AutocastClass::Low: return "low";
    case AutocastClass::F32: return "f32";
    case AutocastClass::Follow: return "follow";
    case AutocastClass::Promote: return "promote";
  }
  return "?";
}

const std::vector<Op>& all_ops() {
  static const std::vector<Op> ops = [] {
    std::vector<Op> v;
    for (const OpInfo& info : table()) v.push_back(info.op);
    return v;
  }();
  return ops;
}

}  // namespace weft
