#include "runtime/tensor.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(TensorTest, ZeroFilledAlignedAndTyped) {
  Tensor t(Type{DType::f32, {3, 5}});
  EXPECT_EQ(t.numel(), 15);
  EXPECT_EQ(t.bytes(), 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
  Tensor scalar;
  EXPECT_EQ(scalar.type(), (Type{DType::f32, {}}));
  EXPECT_EQ(scalar.numel(), 1);
  Tensor empty(Type{DType::f64, {0, 4}});
  EXPECT_EQ(empty.numel(), 0);
}

TEST(TensorTest, CopyIsDeep) {
  auto a = Tensor::from_vector<int64_t>({2}, {1, 2});
  Tensor b = a;
  b.data<int64_t>()[0] = 7;
  EXPECT_EQ(a.data<int64_t>()[0], 1);
  EXPECT_FALSE(a == b);
  b = a;
  EXPECT_TRUE(a == b);
}

TEST(TensorTest, BoolIsOneByte) {
  auto t = Tensor::from_vector<bool>({3}, {true, false, true});
  EXPECT_EQ(t.bytes(), 3u);
  EXPECT_EQ(t.data<uint8_t>()[0], 1);
  EXPECT_EQ(t.data<uint8_t>()[1], 0);
  t.set_double(1, 5.0);
  EXPECT_EQ(t.data<uint8_t>()[1], 1);
}

TEST(TensorTest, F16RoundsToNearestEven) {
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);  // Halfway to 2^16 rounds to inf.
  EXPECT_EQ(float_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_f16(std::nanf("")) & 0x7c00, 0x7c00);
  EXPECT_NE(float_to_f16(std::nanf("")) & 0x3ff, 0);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(float_to_f16(1.0f + 0x1p-11f), 0x3c00);
  // 1 + 3·2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: ties to even (1 + 2^-9).
  EXPECT_EQ(float_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(float_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
  // Subnormals: the smallest is 2^-24; half of it ties to zero, a bit more rounds up.
  EXPECT_EQ(float_to_f16(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_f16(0x1p-25f), 0x0000);
  EXPECT_EQ(float_to_f16(0x1.8p-24f), 0x0002);  // 1.5 ulp: ties to even (2).
  EXPECT_EQ(float_to_f16(0x1p-25f + 0x1p-35f), 0x0001);
  EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
  // Every f16 survives f16 -> float -> f16.
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0) continue;  // NaNs.
    ASSERT_EQ(float_to_f16(f16_to_float(static_cast<uint16_t>(bits))), bits) << bits;
  }
  EXPECT_EQ(f16_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(f16_to_float(0x3555), 0.333251953125f);
}

TEST(TensorTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);             // Tie to even.
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);         // Tie to even (up).
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // Above the tie.
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // Overflows to inf.
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_float(0xc040), -3.0f);
}

// to_dtype, the host's one element conversion: f32 to f16/bf16 rounds once to nearest
// even, half to f32 is exact, NaN and inf survive, floats to integers truncate and
// saturate (NaN gives 0), bool is `v != 0`, and the same dtype is a copy.
TEST(TensorTest, ToDtypeConvertsEachElement) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector<float>(
      {6}, {1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-11f, -inf, inf, std::nanf(""), 65520.0f});
  const Tensor b = to_dtype(x, DType::bf16);
  ASSERT_EQ(b.type(), (Type{DType::bf16, {6}}));
  EXPECT_EQ(b.data<uint16_t>()[0], 0x3f82);  // A tie: to the even neighbour (up).
  EXPECT_EQ(b.data<uint16_t>()[1], 0x3f80);  // Below half an ulp: down.
  EXPECT_EQ(b.data<uint16_t>()[2], 0xff80);
  EXPECT_EQ(b.data<uint16_t>()[3], 0x7f80);
  EXPECT_TRUE(std::isnan(b.get_double(4)));
  EXPECT_EQ(b.get_double(5), 65536.0);
  const Tensor h = to_dtype(x, DType::f16);
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3c0c);  // 1 + 3·2^-8 is exact in f16.
  EXPECT_EQ(h.data<uint16_t>()[1], 0x3c00);  // 1 + 2^-11: a tie, to even (1).
  EXPECT_EQ(h.data<uint16_t>()[2], 0xfc00);
  EXPECT_EQ(h.data<uint16_t>()[3], 0x7c00);
  EXPECT_TRUE(std::isnan(h.get_double(4)));
  EXPECT_EQ(h.data<uint16_t>()[5], 0x7c00);  // Halfway to 2^16: inf.
  // Every element as set_double stores it, and back to f32 exactly.
  for (DType low : {DType::f16, DType::bf16}) {
    const Tensor lowered = to_dtype(x, low);
    Tensor expected(Type{low, {6}});
    for (int64_t i = 0; i < x.numel(); ++i) expected.set_double(i, x.get_double(i));
    EXPECT_TRUE(lowered == expected) << dtype_name(low);
    const Tensor back = to_dtype(lowered, DType::f32);
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (std::isnan(lowered.get_double(i))) {
        EXPECT_TRUE(std::isnan(back.data<float>()[i]));
      } else {
        EXPECT_EQ(back.data<float>()[i], static_cast<float>(lowered.get_double(i))) << i;
      }
    }
  }
  const Tensor ints = to_dtype(Tensor::from_vector<float>({5}, {-2.7f, 3e10f, -3e10f, std::nanf(""), 0.5f}),
                               DType::i32);
  EXPECT_EQ(ints.to_doubles(), (std::vector<double>{-2, 2147483647, -2147483648.0, 0, 0}));
  EXPECT_EQ(to_dtype(ints, DType::u8).to_doubles(), (std::vector<double>{0, 255, 0, 0, 0}));
  EXPECT_EQ(to_dtype(ints, DType::f64).to_doubles(), ints.to_doubles());
  const Tensor flags = to_dtype(Tensor::from_vector<float>({3}, {0, -0.5f, 2}), DType::boolean);
  EXPECT_EQ(flags.to_doubles(), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(to_dtype(flags, DType::f32).to_doubles(), (std::vector<double>{0, 1, 1}));
  const auto big = Tensor::from_vector<int64_t>({1}, {(int64_t{1} << 62) + 1});
  EXPECT_TRUE(to_dtype(big, DType::i64) == big);  // A copy: exact beyond 2^53.
}

TEST(TensorTest, SetDoubleSaturatesIntegers) {
  Tensor t(Type{DType::i32, {4}});
  t.set_double(0, 1e12);
  t.set_double(1, -1e12);
  t.set_double(2, -2.7);
  t.set_double(3, std::nan(""));
  EXPECT_EQ(t.data<int32_t>()[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(t.data<int32_t>()[1], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(t.data<int32_t>()[2], -2);
  EXPECT_EQ(t.data<int32_t>()[3], 0);
  EXPECT_EQ(saturating_cast<uint8_t>(300.0), 255);
  EXPECT_EQ(saturating_cast<uint8_t>(-1.0), 0);
  EXPECT_EQ(saturating_cast<int64_t>(1e30), std::numeric_limits<int64_t>::max());
}

TEST(TensorTest, AllCloseUsesAbsoluteAndRelativeTolerance) {
  auto b = Tensor::from_vector<double>({3}, {0.0, 100.0, -1.0});
  auto a = Tensor::from_vector<double>({3}, {1e-3, 100.1, -1.001});
  EXPECT_TRUE(all_close(a, b, 1e-3));
  std::string why;
  EXPECT_FALSE(all_close(a, b, 1e-4, &why));
  EXPECT_EQ(why, "f64[3]: element [0] is 0.001, expected 0 (tol 0.0001); 3 of 3 elements differ");
  auto c = Tensor::from_vector<float>({3}, {0, 100, -1});
  EXPECT_FALSE(all_close(c, b, 1.0, &why));
  EXPECT_EQ(why, "types differ: f32[3] vs f64[3]");
  auto nan = Tensor::from_vector<float>({2, 1}, {std::nanf(""), 1});
  EXPECT_TRUE(all_close(nan, nan, 0));
  auto one = Tensor::from_vector<float>({2, 1}, {1, 1});
  EXPECT_FALSE(all_close(nan, one, 1, &why));
  EXPECT_EQ(why, "f32[2,1]: element [0,0] is nan, expected 1 (tol 1); 1 of 2 elements differs");
  // One element is one ("1 of 1 elements differ" before).
  EXPECT_FALSE(all_close(Tensor::scalar(DType::f32, 2), Tensor::scalar(DType::f32, 1), 0.1, &why));
  EXPECT_EQ(why, "f32[]: element [] is 2, expected 1 (tol 0.1); 1 of 1 element differs");
}

TEST(TensorTest, ToString) {
  auto t = Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(tensor_to_string(t), "i32[2,2] {1, 2, 3, 4}");
  EXPECT_EQ(tensor_to_string(t, 2), "i32[2,2] {1, 2, ...}");
}

}  // namespace
}  // namespace weft
