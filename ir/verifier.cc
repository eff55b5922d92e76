#include "ir/verifier.h"

#include <unordered_map>
#include <unordered_set>

#include "ir/fused_kind.h"
#include "ir/schema_check.h"
#include "ir/shape_rules.h"
#include "ir/text_util.h"

namespace weft {
namespace {

class Verifier {
 public:
  Verifier(const Graph& g, const VerifyOptions& options) : g_(g), options_(options) {}

  Status run() {
    defined_.assign(g_.num_values(), false);
    for (const Input& in : g_.inputs()) WEFT_RETURN_IF_ERROR(check_input(in));
    for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i) {
      WEFT_RETURN_IF_ERROR(check_node(i, g_.node(i)));
    }
    return check_outputs();
  }

 private:
  bool exists(ValueId v) const { return v >= 0 && v < g_.num_values(); }

  /// Records a new definition of `v`, whose name must not be taken yet.
  Status define(ValueId v, const Location& loc) {
    const std::string& name = g_.value(v).name;
    if (!names_.insert(name).second) {
      return Error{"value name %" + name + " is defined twice", loc};
    }
    defined_[v] = true;
    return Status();
  }

  Status check_input(const Input& in) {
    if (!exists(in.value)) {
      return Error{"graph input refers to value #" + std::to_string(in.value) +
                       ", which does not exist",
                   in.loc};
    }
    const Value& v = g_.value(in.value);
    if (!v.type) return Error{"graph input %" + v.name + " has no type", in.loc};
    return define(in.value, in.loc);
  }

  Status check_node(int index, const Node& node) {
    const int op_index = static_cast<int>(node.op);
    WEFT_CHECK(op_index >= 0 && op_index < kNumOps, "node with an invalid op enum");
    const OpInfo& info = node.info();
    // Messages from ir/schema_check.h name the op themselves; ours get an `op: ` prefix.
    auto at = [&](std::string message) { return Status(Error{std::move(message), node.loc}); };
    auto fail = [&](const std::string& message) {
      return at(std::string(info.name) + ": " + message);
    };

    // Operands: the right number, each defined before this node.
    const int n = static_cast<int>(node.operands.size());
    if (auto message = check_operand_count(info, node.operands.size())) return at(*message);
    for (int k = 0; k < n; ++k) {
      ValueId v = node.operands[k];
      if (!exists(v)) {
        return fail("operand " + std::to_string(k) + " refers to value #" + std::to_string(v) +
                    ", which does not exist");
      }
      if (!defined_[v]) {
        const Value& value = g_.value(v);
        return fail("operand %" + value.name +
                    (value.node > index ? " is used before it is defined (by node " +
                                              std::to_string(value.node) + ")"
                                        : " is not defined (its producer was removed)"));
      }
    }

    if (auto message = check_attributes(node, info)) return at(*message);
    if ((node.body != nullptr) != has_body(node.op)) {
      return fail(node.body ? "only 'fused' and 'scan' nodes have a body" : "has no body");
    }
    if (node.body) {
      Status body = verify(*node.body, options_);
      if (!body.ok()) return fail("in its body: " + body.error().message);
      if (auto message = check_fused_body(node)) return at(*message);
    }
    if (node.op == Op::Assign) {
      if (auto message = check_assign_target(g_, node.operands[0])) return at(*message);
      WEFT_RETURN_IF_ERROR(check_assigned_once(node, fail));
    }

    // Results: as many as the op has, produced by this node.
    const int want_results = has_body(node.op) && node.body
                                 ? static_cast<int>(node.body->outputs().size())
                                 : info.results;
    if (static_cast<int>(node.results.size()) != want_results) {
      return fail("has " + std::to_string(node.results.size()) + " results but should have " +
                  std::to_string(want_results));
    }
    for (ValueId r : node.results) {
      if (!exists(r) || g_.value(r).node != index) {
        return fail("result #" + std::to_string(r) + " is not recorded as produced by node " +
                    std::to_string(index));
      }
      WEFT_RETURN_IF_ERROR(define(r, node.loc));
    }
    if (options_.check_types) return check_types(node);
    return Status();
  }

  /// The schema checks the parser also applies (ir/schema_check.h), so both word a
  /// violation the same way.
  static std::optional<std::string> check_attributes(const Node& node, const OpInfo& info) {
    for (const auto& [name, value] : node.attrs) {
      Attribute copy = value;  // check_attribute widens ints in place
      if (auto message = check_attribute(info, name, copy)) return message;
    }
    return check_required_attributes(info, node.attrs);
  }

  /// Two assigns to one target in a step would make the result depend on their order.
  template <typename Fail>
  Status check_assigned_once(const Node& node, const Fail& fail) {
    ValueId target = node.operands[0];
    const Value& v = g_.value(target);
    auto [it, first] = assigned_.emplace(target, node.loc);
    if (!first) {
      return fail("%" + v.name + " is assigned twice" +
                  (it->second.known() ? " (first at " + it->second.to_string() + ")" : "") +
                  "; a param or state input takes at most one assign per step");
    }
    return Status();
  }

  Status check_types(const Node& node) {
    std::vector<Type> operand_types;
    for (ValueId v : node.operands) {
      if (!g_.value(v).type) return Status();  // not inferred yet
      operand_types.push_back(*g_.value(v).type);
    }
    WEFT_ASSIGN_OR_RETURN(Type inferred0, infer_node_type(node, operand_types));
    for (size_t k = 0; k < node.results.size(); ++k) {
      const Value& v = g_.value(node.results[k]);
      const Type inferred = result_type(node, k, inferred0, operand_types);
      if (v.type && !(*v.type == inferred)) {
        return Error{"%" + v.name + " has type " + v.type->to_string() + " but " +
                         std::string(op_name(node.op)) + "'s shape rule gives " +
                         inferred.to_string(),
                     node.loc};
      }
    }
    return Status();
  }

  Status check_outputs() {
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      ValueId v = g_.outputs()[i];
      std::string which = "output " + std::to_string(i);
      if (!exists(v)) {
        return Error{which + " refers to value #" + std::to_string(v) + ", which does not exist",
                     {}};
      }
      if (!defined_[v]) {
        return Error{which + " %" + g_.value(v).name + " is not defined (its producer was removed)",
                     {}};
      }
    }
    const size_t declared = g_.declared_output_types().size();
    if (declared > 0 && declared != g_.outputs().size()) {
      const size_t returned = g_.outputs().size();
      return Error{"the signature declares " + counted(static_cast<int64_t>(declared), "output type") +
                       " but the graph returns " + counted(static_cast<int64_t>(returned), "value"),
                   g_.loc()};
    }
    return Status();
  }

  const Graph& g_;
  const VerifyOptions& options_;
  std::vector<bool> defined_;
  std::unordered_set<std::string> names_;
  std::unordered_map<ValueId, Location> assigned_;
};

}  // namespace

Status verify(const Graph& g, const VerifyOptions& options) {
  return Verifier(g, options).run();
}

}  // namespace weft
