// Shape rules of the elementwise ops: unary (same type, a dtype class per op), cast,
// binary with NumPy broadcasting, comparisons, logic and select. Semantics: shape_rules.h.

#include "ir/shape_rules_internal.h"

namespace weft::shape_rules_internal {
namespace {

// Unary ops keep their operand's type; they differ in which dtypes they accept.
template <bool (*accepts)(DType), const char* need>
StatusOr<Type> unary(const Node&, const std::vector<Type>& in) {
  WEFT_RETURN_IF_ERROR(require_dtype(in[0], "operand", accepts(in[0].dtype), need));
  return in[0];
}

bool any_float(DType d) { return is_floating(d); }
bool any_number(DType d) { return is_floating(d) || is_integer(d); }
bool any_bool(DType d) { return d == DType::boolean; }

constexpr char kNeedFloat[] = "a floating dtype (f32, f64, f16, bf16); insert a cast";
constexpr char kNeedSigned[] = "a floating or signed integer dtype (f*, i32, i64)";
constexpr char kNeedNumber[] = "a numeric dtype (not bool)";
constexpr char kNeedBool[] = "bool";

StatusOr<Type> gelu(const Node& node, const std::vector<Type>& in) {
  WEFT_RETURN_IF_ERROR(require_dtype(in[0], "operand", is_floating(in[0].dtype), kNeedFloat));
  const std::string& approx = node.str_attr("approximate");
  if (approx != "none" && approx != "tanh") {
    return rule_error("approximate must be \"none\" or \"tanh\", got \"" + approx + "\"");
  }
  return in[0];
}

StatusOr<Type> cast(const Node& node, const std::vector<Type>& in) {
  return Type{node.dtype_attr("dtype"), in[0].shape};
}

// Binary ops: one dtype, broadcast shapes. Comparisons return bool; arithmetic and
// logic keep the operands' dtype.
enum class Kind { arithmetic, comparison, logic };

template <Kind kind>
StatusOr<Type> binary(const Node&, const std::vector<Type>& in) {
  WEFT_RETURN_IF_ERROR(require_same_dtype(in[0], "lhs", in[1], "rhs"));
  if (kind == Kind::arithmetic && in[0].dtype == DType::boolean) {
    return rule_error("arithmetic on bool operands (lhs " + str(in[0]) + ", rhs " + str(in[1]) +
                      ") is not defined; use and/or, or cast to a number");
  }
  if (kind == Kind::logic && in[0].dtype != DType::boolean) {
    return rule_error("operands must be bool, got lhs " + str(in[0]) + " and rhs " +
                      str(in[1]) + "; compare them (ne) to get bools");
  }
  WEFT_ASSIGN_OR_RETURN(Shape shape, broadcast(in[0], "lhs", in[1], "rhs"));
  return Type{kind == Kind::comparison ? DType::boolean : in[0].dtype, std::move(shape)};
}

StatusOr<Type> select(const Node&, const std::vector<Type>& in) {
  if (in[0].dtype != DType::boolean) {
    return rule_error("condition " + str(in[0]) + " must be bool (operands: cond " +
                      str(in[0]) + ", a " + str(in[1]) + ", b " + str(in[2]) + ")");
  }
  WEFT_RETURN_IF_ERROR(require_same_dtype(in[1], "a", in[2], "b"));
  WEFT_ASSIGN_OR_RETURN(Shape ab, broadcast(in[1], "a", in[2], "b"));
  WEFT_ASSIGN_OR_RETURN(Shape all, broadcast(in[0], "cond", Type{in[1].dtype, ab},
                                             "broadcast(a, b)"));
  return Type{in[1].dtype, std::move(all)};
}

}  // namespace

void add_elementwise_rules(RuleTable& t) {
  // By math class (ops.def's last column): an op's class says which dtypes it takes.
  for (Op op : all_ops()) {
    switch (op_info(op).math) {
      case MathClass::None: break;
      case MathClass::Signed: set_rule(t, op, unary<is_signed, kNeedSigned>); break;
      case MathClass::Numeric: set_rule(t, op, unary<any_number, kNeedNumber>); break;
      case MathClass::Algebraic:
      case MathClass::Transcendental: set_rule(t, op, unary<any_float, kNeedFloat>); break;
      case MathClass::Arithmetic:
      case MathClass::Division:
      case MathClass::Power: set_rule(t, op, binary<Kind::arithmetic>); break;
      case MathClass::Comparison: set_rule(t, op, binary<Kind::comparison>); break;
      case MathClass::Logical:
        if (op_info(op).arity == 1) {
          set_rule(t, op, unary<any_bool, kNeedBool>);
        } else {
          set_rule(t, op, binary<Kind::logic>);
        }
        break;
      case MathClass::Select: set_rule(t, op, select); break;
      case MathClass::Cast: set_rule(t, op, cast); break;
    }
  }
  set_rule(t, Op::Gelu, gelu);  // A transcendental op whose attribute is checked too.
}

}  // namespace weft::shape_rules_internal
