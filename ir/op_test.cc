// The op table's half rule (ops.def's third autocast column, ir/op.h HalfRule): which ops
// compute f16/bf16 values in f32 and round. The backends' tests check that each follows
// it (runtime/reference:kernels_test, runtime/cpu:half_test, codegen:kernel_half_test);
// here, that the table says what its categories imply.

#include <gtest/gtest.h>

#include "ir/op.h"

namespace weft {
namespace {

// Movement, creation and state copy or set bits, so no dtype needs widening; select
// picks bits, cast converts once, a body's own nodes follow their rules, all_reduce is
// the communicator's. Every other op computes (accumulates, multiplies, transcends) and
// on half values does so in f32, rounding its result once.
bool takes_bits_as_they_are(Op op) {
  switch (op_info(op).category) {
    case OpCategory::Movement:
    case OpCategory::Creation:
    case OpCategory::State: return true;
    default: break;
  }
  const MathClass math = op_info(op).math;
  return math == MathClass::Select || math == MathClass::Cast || has_body(op) ||
         op == Op::AllReduce;
}

TEST(HalfRule, EveryOpWidensUnlessItTakesBitsAsTheyAre) {
  for (Op op : all_ops()) {
    SCOPED_TRACE(std::string(op_name(op)));
    EXPECT_EQ(op_info(op).half, takes_bits_as_they_are(op) ? HalfRule::Exact : HalfRule::Widen);
    EXPECT_EQ(computes_half_in_f32(op), op_info(op).half == HalfRule::Widen);
  }
}

}  // namespace
}  // namespace weft
