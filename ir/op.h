#pragma once
// The op enum and its static description, generated from ir/ops.def.

#include <optional>
#include <string_view>
#include <vector>

#include "ir/attribute.h"

namespace weft {

enum class Op {
#define WEFT_OP(id, name, arity, results, category, schema, math) id,
#include "ir/ops.def"
#undef WEFT_OP
};

inline constexpr int kNumOps = 0
#define WEFT_OP(id, name, arity, results, category, schema, math) +1
#include "ir/ops.def"
#undef WEFT_OP
    ;
// ops.def states its count at its end: a line added or lost by a bad merge fails here.
#define WEFT_OP(id, name, arity, results, category, schema, math)
#define WEFT_OP_COUNT(n)                                                                    \
  static_assert(kNumOps == (n), "ops.def changed: update the count at its end; the "      \
                                "completeness tests name the tables an op still lacks");
#include "ir/ops.def"
#undef WEFT_OP_COUNT
#undef WEFT_OP

/// What the fuser and other generic passes ask about an op (tinygrad's GroupOp sets).
enum class OpCategory { Elementwise, Reduction, Movement, Contraction, Creation, State,
                        Composite, Other };

/// One attribute an op accepts.
struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  bool required = false;              ///< No default, must be given.
  std::optional<Attribute> default_;  ///< Value when absent (if any).
};

/// An elementwise op's kind of scalar math (ops.def's last column): which dtypes its shape
/// rule accepts, and which dtypes each backend's generated code and library kernels
/// compute it in (ir/kernel_support.h). `None` for every op that is not elementwise.
enum class MathClass {
  None,
  Signed,          ///< neg, abs, sign, floor: floats and signed integers.
  Numeric,         ///< relu: any number (not bool).
  Algebraic,       ///< sqrt, rsqrt: floats; native instructions on every target.
  Transcendental,  ///< exp, log, tanh, erf, gelu...: floats; libm / libdevice in f64.
  Arithmetic,      ///< add, sub, mul, maximum, minimum: two numbers of one dtype.
  Division,        ///< div: integers raise division by zero at run time.
  Power,           ///< pow.
  Comparison,      ///< eq ... ge: two values of one dtype, a bool result.
  Logical,         ///< not, and, or: bools.
  Select,          ///< select(cond, a, b).
  Cast,            ///< cast to the `dtype` attribute.
};

/// How a mixed-precision step runs an op (ops.def's autocast table; passes/autocast.h).
enum class AutocastClass {
  None,     ///< Untouched: its operands keep the dtypes they had before autocast.
  Low,      ///< Contractions: operands cast to the low precision, the result low.
  F32,      ///< Accumulations, exp/log, norms, losses: low operands cast to f32.
  Follow,   ///< Runs in its operand's dtype (movement, relu, tanh, max...).
  Promote,  ///< Mixed float operands cast to the widest (add, mul, concat, select...).
};

/// How an op computes on f16/bf16 values (ops.def's third autocast column), on every
/// backend and in the reference interpreter, which states it.
enum class HalfRule {
  Widen,    ///< Half operands widened to f32, computed in f32, a half result rounded once.
  Follow,   ///< Exact, follows its operands: gives one of them as it is (select's pick), so
            ///< where they are held wide (a body computing in f32) it picks the wide values.
  Convert,  ///< Converts to its `dtype` attribute (cast): exact when it widens or copies,
            ///< one rounding to nearest even when it narrows.
  Exact,    ///< Takes half values as they are, bits copied or set: movement, creation,
            ///< state, bodies (their own nodes follow their rules), all_reduce.
};

struct OpInfo {
  Op op;
  std::string_view name;
  int arity;    ///< -1: variadic, at least one operand.
  int results;  ///< 0, 1, or a fixed count above 1 (ops.def: attention_grad's 3).
  OpCategory category;
  std::vector<AttrSpec> attrs;
  MathClass math = MathClass::None;
  AutocastClass autocast = AutocastClass::None;
  HalfRule half = HalfRule::Widen;

  const AttrSpec* find_attr(std::string_view attr_name) const;
};

const OpInfo& op_info(Op op);
inline std::string_view op_name(Op op) { return op_info(op).name; }
/// The op named `name`, or nullopt. The convolutions' former names (conv2d,
/// conv2d_backward_input, conv2d_backward_weight) still parse, as conv and its gradients.
std::optional<Op> parse_op(std::string_view name);
std::string_view category_name(OpCategory category);
/// "none", "signed", ..., "cast" (MathClass in lower case).
std::string_view math_class_name(MathClass math);
/// "none", "low", "f32", "follow", "promote".
std::string_view autocast_class_name(AutocastClass autocast);
/// The op's autocast class (ops.def's autocast table).
inline AutocastClass autocast_class(Op op) { return op_info(op).autocast; }
/// How `op` computes on f16/bf16 values (ops.def's half rule).
inline HalfRule half_rule(Op op) { return op_info(op).half; }
/// Whether `op`, given f16 or bf16 operands or result, computes in f32 and rounds (the
/// reference interpreter's rule, which every backend's half kernels follow: HalfRule).
inline bool computes_half_in_f32(Op op) { return half_rule(op) == HalfRule::Widen; }
/// Ops whose nodes carry a body graph (Node::body): `fused` and `scan`.
inline bool has_body(Op op) { return op == Op::Fused || op == Op::Scan; }
/// Ops whose nodes may have several results: `fused` (one per body output), `scan`, and
/// the ops with a fixed count above 1 in ops.def (attention_grad's dq, dk, dv).
inline bool has_several_results(Op op) { return has_body(op) || op_info(op).results > 1; }
/// All ops in ops.def order.
const std::vector<Op>& all_ops();

}  // namespace weft
