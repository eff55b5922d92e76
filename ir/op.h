#pragma once
// The op enum and its static description, generated from ir/ops.def.

#include <optional>
#include <string_view>
#include <vector>

#include "ir/attribute.h"

namespace weft {

enum class Op {
#define WEFT_OP(id, name, arity, results, category, schema) id,
#include "ir/ops.def"
#undef WEFT_OP
};

inline constexpr int kNumOps = 0
#define WEFT_OP(id, name, arity, results, category, schema) +1
#include "ir/ops.def"
#undef WEFT_OP
    ;
static_assert(kNumOps == 70, "ops.def changed: update kNumOps's expected count and the tables "
                             "keyed by op (shape rules, reference kernels, gradient rules)");

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

struct OpInfo {
  Op op;
  std::string_view name;
  int arity;    ///< -1: variadic, at least one operand.
  int results;  ///< 0 or 1.
  OpCategory category;
  std::vector<AttrSpec> attrs;

  const AttrSpec* find_attr(std::string_view attr_name) const;
};

const OpInfo& op_info(Op op);
inline std::string_view op_name(Op op) { return op_info(op).name; }
/// The op named `name`, or nullopt. The convolutions' former names (conv2d,
/// conv2d_backward_input, conv2d_backward_weight) still parse, as conv and its gradients.
std::optional<Op> parse_op(std::string_view name);
std::string_view category_name(OpCategory category);
/// Ops whose nodes carry a body graph (Node::body): `fused` and `scan`.
inline bool has_body(Op op) { return op == Op::Fused || op == Op::Scan; }
/// Ops whose nodes may have several results: `fused` (one per body output) and `scan`.
inline bool has_several_results(Op op) { return has_body(op); }
/// All ops in ops.def order.
const std::vector<Op>& all_ops();

}  // namespace weft
