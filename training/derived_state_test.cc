// Derived state inputs (training/derived_state.h): names, the refresh routine's rounding
// (round to nearest even, as the step's cast kernels), and the error for a missing master.
#include "training/derived_state.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(DerivedState, CopyNames) {
  EXPECT_EQ(weight_copy_name("0.weight"), "weft.copy.0.weight");
  EXPECT_EQ(weight_copy_source("weft.copy.0.weight"), "0.weight");
  EXPECT_EQ(weight_copy_source("weft.copy."), std::nullopt);
  EXPECT_EQ(weight_copy_source("0.weight"), std::nullopt);
  EXPECT_EQ(weight_copy_source("optimizer.0.weight.exp_avg"), std::nullopt);
}

// 1 + 3·2^-8 lies halfway between two bf16 neighbours (1 + 2^-7 and 1 + 2^-6): ties go to
// the even one; 1 + 2^-8 + 2^-20 rounds up.
TEST(DerivedState, DerivedValueRoundsToNearestEven) {
  const Tensor master = Tensor::from_vector<float>({3}, {1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, -2.5f});
  const Tensor copy = derived_value(master, Type{DType::bf16, Shape({3})});
  EXPECT_EQ(copy.type(), (Type{DType::bf16, Shape({3})}));
  EXPECT_EQ(copy.get_double(0), 1.0 + 0x1p-6);
  EXPECT_EQ(copy.get_double(1), 1.0 + 0x1p-7);
  EXPECT_EQ(copy.get_double(2), -2.5);
}

TEST(DerivedState, StateValue) {
  std::map<std::string, Tensor> values = {{"w", Tensor::from_vector<float>({2}, {0.5f, 3.0f})}};
  const Type low{DType::f16, Shape({2})};
  StatusOr<Tensor> copy = state_value(values, "weft.copy.w", low);
  ASSERT_TRUE(copy.ok()) << copy.error().to_string();
  EXPECT_EQ(copy->type(), low);
  EXPECT_EQ(copy->get_double(1), 3.0);
  StatusOr<Tensor> w = state_value(values, "w", values.at("w").type());
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(*w == values.at("w"));
  StatusOr<Tensor> missing = state_value(values, "weft.copy.v", low);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().to_string(),
            "error: the compiled graph needs 'weft.copy.v' (a copy of parameter 'v'), which the "
            "trainer does not have");
  EXPECT_EQ(state_value(values, "b", low).error().to_string(),
            "error: the compiled graph needs 'b', which the trainer does not have");
}

// DerivedState keeps the copy a step wrote for the next step, refreshes a copy from its
// master only when none is kept (the first step, after forget()), and passes every other
// input through from the values.
TEST(DerivedState, KeepsWhatTheStepWroteAndRefreshesOnlyWhenNoneIsKept) {
  std::map<std::string, Tensor> values = {{"w", Tensor::from_vector<float>({2}, {0.5f, 3.0f})}};
  const Type low{DType::bf16, Shape({2})};
  DerivedState derived;
  StatusOr<Tensor> first = derived.take(values, "weft.copy.w", low);
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_EQ(first->get_double(1), 3.0);
  EXPECT_EQ(derived.refreshes(), 1);
  // The step wrote a copy of its updated master: the next step reads it, no refresh.
  derived.keep("weft.copy.w", Tensor::from_doubles(DType::bf16, Shape({2}), {1.5, -2}));
  for (int step = 0; step < 3; ++step) {
    StatusOr<Tensor> kept = derived.take(values, "weft.copy.w", low);
    ASSERT_TRUE(kept.ok());
    EXPECT_EQ(kept->to_doubles(), (std::vector<double>{1.5, -2}));
    derived.keep("weft.copy.w", std::move(*kept));
  }
  EXPECT_EQ(derived.refreshes(), 1);
  // A master is not derived state: passed through, not counted.
  StatusOr<Tensor> w = derived.take(values, "w", values.at("w").type());
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(*w == values.at("w"));
  EXPECT_EQ(derived.refreshes(), 1);
  // The master changed outside the step: the copy follows it.
  derived.forget();
  StatusOr<Tensor> again = derived.take(values, "weft.copy.w", low);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->to_doubles(), (std::vector<double>{0.5, 3}));
  EXPECT_EQ(derived.refreshes(), 2);
  EXPECT_EQ(derived.take(values, "weft.copy.v", low).error().to_string(),
            "error: the compiled graph needs 'weft.copy.v' (a copy of parameter 'v'), which the "
            "trainer does not have");
}

}  // namespace
}  // namespace weft
