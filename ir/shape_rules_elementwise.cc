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
  for (Op op : {Op::Neg, Op::Abs, Op::Sign, Op::Floor}) {
    set_rule(t, op, unary<is_signed, kNeedSigned>);
  }
  for (Op op : {Op::Exp, Op::Log, Op::Log1p, Op::Sqrt, Op::Rsqrt, Op::Tanh, Op::Sigmoid, Op::Sin,
                Op::Cos, Op::Erf}) {
    set_rule(t, op, unary<any_float, kNeedFloat>);
  }
  set_rule(t, Op::Relu, unary<any_number, kNeedNumber>);
  set_rule(t, Op::Not, unary<any_bool, kNeedBool>);
  set_rule(t, Op::Gelu, gelu);
  set_rule(t, Op::Cast, cast);
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Maximum, Op::Minimum}) {
    set_rule(t, op, binary<Kind::arithmetic>);
  }
  for (Op op : {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge}) {
    set_rule(t, op, binary<Kind::comparison>);
  }
  for (Op op : {Op::And, Op::Or}) set_rule(t, op, binary<Kind::logic>);
  set_rule(t, Op::Select, select);
}

}  // namespace weft::shape_rules_internal
