// bf16 on a CPU without AVX512_BF16, forced with force_bf16_conversion_for_testing: matmuls
// and convolutions convert to f32, run the f32 kernels and round (half.cc), still within
// 1 ulp of the reference interpreter, and binding says so once on stderr. A test binary
// of its own: the note is printed once per process.

#include <gtest/gtest.h>

#include "runtime/cpu/kernel_testing.h"
#include "runtime/cpu/kernels_internal.h"

namespace weft::cpu {
namespace {

using testing::random_tensor;
using testing::run_both;

void expect_converted(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  const testing::Comparison c = run_both(op, attrs, inputs);
  ASSERT_TRUE(c.has_kernel && c.cpu_status.ok()) << c.cpu_status.to_string();
  EXPECT_FALSE(c.gap.has_value());
  EXPECT_EQ(c.description.rfind("via f32 (converted): ", 0), 0u) << c.description;
  std::string why;
  EXPECT_TRUE(testing::within_ulps(c.cpu, c.reference, 1, /*abs_tol=*/1e-4, &why)) << why;
}

TEST(HalfConversionTest, ForcedBf16ConvertsAndSaysSoOnce) {
  force_bf16_conversion_for_testing(true);
  ::testing::internal::CaptureStderr();
  const Tensor a = random_tensor({DType::bf16, Shape{96, 1024}}, 1);
  const Tensor b = random_tensor({DType::bf16, Shape{1024, 64}}, 2);
  expect_converted(Op::Matmul, {}, {a, b});
  const Attrs conv = {{"stride", IntList{1, 1}}, {"padding", IntList{1, 1}},
                      {"dilation", IntList{1, 1}}, {"groups", int64_t{1}}};
  const Tensor x = random_tensor({DType::bf16, Shape{3, 16, 8, 8}}, 3);
  const Tensor w = random_tensor({DType::bf16, Shape{32, 16, 3, 3}}, 4);
  expect_converted(Op::Conv, conv, {x, w});
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::string note =
      "weft: note: bf16 matmuls and convolutions on the CPU convert to f32, run the f32 "
      "kernels and round (runtime/cpu/half.cc): the conversion path is forced (a test)\n";
  EXPECT_EQ(err, note);  // Once, though two kernels were bound.
  force_bf16_conversion_for_testing(false);
}

}  // namespace
}  // namespace weft::cpu
