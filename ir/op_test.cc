// The op table's half rule (ops.def's third autocast column, ir/op.h HalfRule): which ops
// compute f16/bf16 values in f32 and round, pick an operand, convert, or copy bits. The
// backends' tests check that each follows
// it (runtime/reference:kernels_test, runtime/cpu:half_test, codegen:kernel_half_test);
// here, that the table says what its categories imply.

#include <gtest/gtest.h>

#include <set>

#include "ir/op.h"

namespace weft {
namespace {

// What an op's categories imply for its half rule: movement, creation and state copy or
// set bits, a body's own nodes follow their rules and all_reduce is the communicator's
// (Exact); select picks an operand (Follow); cast converts (Convert). Every other op
// computes (accumulates, multiplies, transcends) and on half values does so in f32,
// rounding its result once (Widen).
HalfRule implied_half_rule(Op op) {
  switch (op_info(op).category) {
    case OpCategory::Movement:
    case OpCategory::Creation:
    case OpCategory::State: return HalfRule::Exact;
    default: break;
  }
  if (has_body(op) || op == Op::AllReduce) return HalfRule::Exact;
  switch (op_info(op).math) {
    case MathClass::Select: return HalfRule::Follow;
    case MathClass::Cast: return HalfRule::Convert;
    default: return HalfRule::Widen;
  }
}

TEST(HalfRule, EveryOpHasTheRuleItsCategoriesImply) {
  std::set<HalfRule> used;
  for (Op op : all_ops()) {
    SCOPED_TRACE(std::string(op_name(op)));
    EXPECT_EQ(half_rule(op), implied_half_rule(op));
    EXPECT_EQ(computes_half_in_f32(op), half_rule(op) == HalfRule::Widen);
    used.insert(half_rule(op));
  }
  // Each rule is some op's: a reader that asks for one is not asking in vain.
  EXPECT_EQ(used, (std::set<HalfRule>{HalfRule::Widen, HalfRule::Follow, HalfRule::Convert,
                                      HalfRule::Exact}));
}

}  // namespace
}  // namespace weft
