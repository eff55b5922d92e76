#include "passes/infer_types.h"

#include "ir/checked_math.h"
#include "ir/shape_rules.h"
#include "ir/verifier.h"

namespace weft {
namespace {

/// Where value `v` comes from: its producer's location, or its graph input's.
Location location_of(const Graph& g, ValueId v) {
  if (int node = g.value(v).node; node >= 0) return g.node(node).loc;
  if (int input = g.input_index(v); input >= 0) return g.inputs()[input].loc;
  return Location{};
}

/// A type whose size in bytes does not fit in int64 cannot be allocated or even
/// measured (Shape::numel would overflow), so it is a user error rather than a crash
/// later. Zero dims do not excuse the others (NumPy's rule, ir/checked_math.h).
Status check_size(const Type& type, const std::string& what, const Location& loc) {
  if (size_fits(type.dtype, type.shape.dims)) return Status();
  return Error{what + " has type " + type.to_string() +
                   ", whose size in bytes does not fit in 64 bits; check its dims",
               loc};
}

Status check_inputs_typed(const Graph& g) {
  for (const Input& in : g.inputs()) {
    const Value& v = g.value(in.value);
    if (!v.type) {
      return Error{"graph input %" + v.name + " has no type; declare it, e.g. %" + v.name +
                       ": f32[4,6]",
                   in.loc};
    }
    WEFT_RETURN_IF_ERROR(check_size(*v.type, "graph input %" + v.name, in.loc));
  }
  return Status();
}

/// The declared `-> (...)` signature must match the outputs' inferred types.
Status check_declared_outputs(const Graph& g) {
  const std::vector<Type>& declared = g.declared_output_types();
  if (declared.empty()) return Status();
  if (declared.size() != g.outputs().size()) {
    // The count is a structural invariant: the verifier's check (and its message) says so.
    Status s = verify(g, {.check_types = false});
    WEFT_CHECK(!s.ok(), "verify accepts a graph whose signature declares another output count");
    return s;
  }
  for (size_t i = 0; i < declared.size(); ++i) {
    ValueId v = g.outputs()[i];
    const Type& inferred = g.type(v);
    if (!(inferred == declared[i])) {
      // Point at the output's producer, or at the signature when that is unknown.
      Location loc = location_of(g, v);
      return Error{"output " + std::to_string(i) + " %" + g.value(v).name + " is " +
                       inferred.to_string() + " but the signature declares " +
                       declared[i].to_string(),
                   loc.known() ? loc : g.loc()};
    }
  }
  return Status();
}

}  // namespace

StatusOr<bool> InferTypesPass::run(Graph& g) {
  WEFT_RETURN_IF_ERROR(check_inputs_typed(g));
  bool changed = false;
  std::vector<Type> operand_types;
  for (const Node& node : g.nodes()) {
    operand_types.clear();
    for (ValueId v : node.operands) operand_types.push_back(g.type(v));
    WEFT_ASSIGN_OR_RETURN(Type inferred, infer_node_type(node, operand_types));
    if (!node.results.empty()) {
      WEFT_RETURN_IF_ERROR(check_size(inferred, std::string(op_name(node.op)) + ": result %" +
                                                    g.value(node.result()).name, node.loc));
    }
    for (size_t k = 0; k < node.results.size(); ++k) {  // none for statements (assign)
      const Type inferred_k = result_type(node, k, inferred, operand_types);
      Value& value = g.mutable_value(node.results[k]);
      if (!value.type) {
        value.type = inferred_k;
        changed = true;
      } else if (!(*value.type == inferred_k)) {
        return Error{"%" + value.name + " is declared " + value.type->to_string() + " but " +
                         std::string(op_name(node.op)) + " gives " + inferred_k.to_string(),
                     node.loc};
      }
    }
  }
  WEFT_RETURN_IF_ERROR(check_declared_outputs(g));
  return changed;
}

}  // namespace weft
