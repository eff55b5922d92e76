// The shape-rule table, the driver that decorates errors, and the checks the per-group
// rule files share. The rules themselves live in shape_rules_{elementwise,structural,
// nn}.cc; semantics are documented in shape_rules.h.

#include "ir/shape_rules.h"

#include <algorithm>

#include "ir/checked_math.h"
#include "ir/schema_check.h"
#include "ir/shape_rules_internal.h"

namespace weft {
namespace shape_rules_internal {

std::string str(const IntList& list) {
  std::string out = "[";
  for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + std::to_string(list[i]);
  return out + "]";
}

bool is_signed(DType d) { return is_floating(d) || d == DType::i32 || d == DType::i64; }

Status require_dtype(const Type& t, std::string_view what, bool ok, std::string_view need) {
  if (ok) return Status();
  return rule_error(std::string(what) + " " + str(t) + " needs " + std::string(need));
}

Status require_same_dtype(const Type& a, std::string_view a_name, const Type& b,
                          std::string_view b_name) {
  if (a.dtype == b.dtype) return Status();
  return rule_error("operand dtypes differ: " + std::string(a_name) + " " + str(a) + " vs " +
                    std::string(b_name) + " " + str(b) +
                    "; weft never converts implicitly, insert a cast {dtype=" +
                    std::string(dtype_name(a.dtype)) + "}");
}

StatusOr<Shape> broadcast(const Type& a, std::string_view a_name, const Type& b,
                          std::string_view b_name) {
  if (auto s = broadcast_shapes(a.shape, b.shape)) return *s;
  // Name the first mismatching pair, counting from the trailing dims as NumPy aligns them.
  for (int i = 1; i <= std::min(a.shape.rank(), b.shape.rank()); ++i) {
    int64_t da = a.shape[a.shape.rank() - i], db = b.shape[b.shape.rank() - i];
    if (da != db && da != 1 && db != 1) {
      return rule_error("cannot broadcast " + std::string(a_name) + " " + str(a) + " with " +
                        std::string(b_name) + " " + str(b) + ": dim " +
                        std::to_string(a.shape.rank() - i) + " of " + std::string(a_name) +
                        " is " + std::to_string(da) + " but dim " +
                        std::to_string(b.shape.rank() - i) + " of " + std::string(b_name) +
                        " is " + std::to_string(db) + " (dims must match or be 1)");
    }
  }
  WEFT_CHECK(false, "broadcast_shapes failed without a mismatching dim");
}

StatusOr<int> normalize(int64_t axis, std::string_view attr_name, const Type& t,
                        std::string_view what) {
  if (auto a = normalize_axis(axis, t.shape.rank())) return *a;
  return rule_error(std::string(attr_name) + " " + std::to_string(axis) +
                    " is out of range for " + std::string(what) + " " + str(t) + " (rank " +
                    std::to_string(t.shape.rank()) + ": valid axes are " +
                    (t.shape.rank() == 0 ? std::string("none")
                                         : std::to_string(-t.shape.rank()) + ".." +
                                               std::to_string(t.shape.rank() - 1)) +
                    ")");
}

StatusOr<std::vector<int>> normalize_unique(const IntList& axes, std::string_view attr_name,
                                            const Type& t, std::string_view what) {
  std::vector<int> out;
  for (int64_t axis : axes) {
    WEFT_ASSIGN_OR_RETURN(int a, normalize(axis, attr_name, t, what));
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      return rule_error(std::string(attr_name) + " " + str(axes) + " name axis " +
                        std::to_string(a) + " of " + std::string(what) + " " + str(t) +
                        " twice");
    }
    out.push_back(a);
  }
  return out;
}

StatusOr<Shape> shape_attr(const Node& node, std::string_view attr_name) {
  const IntList& dims = node.ints_attr(attr_name);
  for (int64_t d : dims) {
    if (d < 0) {
      return rule_error(std::string(attr_name) + " " + str(dims) +
                        " has a negative dim; sizes must be >= 0");
    }
  }
  if (!checked_extent(dims)) {
    return rule_error(std::string(attr_name) + " " + str(dims) +
                      " is too large: its element count overflows int64");
  }
  return Shape(dims);
}

StatusOr<IntList> list_attr(const Node& node, std::string_view attr_name, size_t n,
                            int64_t min) {
  const IntList& list = node.ints_attr(attr_name);
  if (list.size() != n) {
    return rule_error(std::string(attr_name) + " " + str(list) + " must have " +
                      std::to_string(n) + " entries");
  }
  for (int64_t v : list) {
    if (v < min) {
      return rule_error(std::string(attr_name) + " " + str(list) + " must have entries >= " +
                        std::to_string(min));
    }
  }
  return list;
}

StatusOr<std::string> reduction_attr(const Node& node) {
  const std::string& r = node.str_attr("reduction");
  if (r == "mean" || r == "sum" || r == "none") return r;
  return rule_error("unknown reduction \"" + r + "\"; expected \"mean\", \"sum\" or \"none\"");
}

}  // namespace shape_rules_internal

namespace {

const shape_rules_internal::RuleTable& rule_table() {
  static const shape_rules_internal::RuleTable table = [] {
    shape_rules_internal::RuleTable t{};
    shape_rules_internal::add_elementwise_rules(t);
    shape_rules_internal::add_structural_rules(t);
    shape_rules_internal::add_nn_rules(t);
    return t;
  }();
  return table;
}

}  // namespace

const ShapeRule* find_shape_rule(Op op) {
  const ShapeRule& rule = rule_table()[static_cast<int>(op)];
  return rule ? &rule : nullptr;
}

StatusOr<Type> infer_node_type(const Node& node, const std::vector<Type>& operands) {
  const OpInfo& info = op_info(node.op);
  std::string prefix = std::string(info.name) + ": ";
  // The rules index operands freely; a node from an unverified graph is refused here.
  if (auto message = check_operand_count(info, operands.size())) {
    return Error{*message, node.loc};
  }
  const ShapeRule* rule = find_shape_rule(node.op);
  WEFT_CHECK(rule != nullptr, prefix + "no shape rule registered");
  StatusOr<Type> result = (*rule)(node, operands);
  if (!result.ok()) return Error{prefix + result.error().message, node.loc};
  return result;
}

Type result_type(const Node& node, size_t k, const Type& inferred,
                 const std::vector<Type>& operands) {
  if (node.body == nullptr && op_info(node.op).results > 1 && k > 0) {
    WEFT_CHECK(k < operands.size(), std::string(op_name(node.op)) +
                                        ": result_type needs the operand types");
    return operands[k];
  }
  if (node.body == nullptr || k >= node.body->outputs().size()) return inferred;
  if (node.op != Op::Scan) return k == 0 ? inferred : node.body->type(node.body->outputs()[k]);
  // A scan's results: its last carries, then each per-iteration output stacked.
  Type t = node.body->type(node.body->outputs()[k]);
  if (static_cast<int64_t>(k) >= node.int_attr("carries")) {
    t.shape.dims.insert(t.shape.dims.begin(), node.int_attr("length"));
  }
  return t;
}

StatusOr<ValueId> add_typed_node(Graph& g, Op op, std::vector<ValueId> operands, Attrs attrs,
                                 Location loc) {
  Node probe{op, operands, attrs, {}, loc};
  std::vector<Type> types;
  types.reserve(operands.size());
  for (ValueId v : operands) types.push_back(g.type(v));
  WEFT_ASSIGN_OR_RETURN(Type type, infer_node_type(probe, types));
  const int results = op_info(op).results;
  ValueId first = g.add_node(op, std::move(operands), std::move(attrs), std::move(loc),
                             results > 0 ? std::optional<Type>(type) : std::nullopt);
  for (int k = 1; k < results; ++k) {
    g.add_result(g.value(first).node, "", result_type(probe, k, type, types));
  }
  return first;
}

}  // namespace weft
