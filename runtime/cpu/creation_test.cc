// The creation kernels against the reference interpreter, on 1 and 2 threads: full and
// iota in every dtype, and the Philox random ops bit for bit (tolerance 0).

#include <gtest/gtest.h>

#include "runtime/cpu/kernel_testing.h"

namespace weft::cpu {
namespace {

using testing::run_both;

void expect_identical(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs) {
  for (int threads : {1, 2}) {
    testing::Comparison c = run_both(op, attrs, inputs, threads);
    ASSERT_TRUE(c.reference_status.ok()) << c.reference_status.to_string();
    ASSERT_TRUE(c.has_kernel) << op_name(op) << ": no kernel";
    ASSERT_TRUE(c.cpu_status.ok()) << c.cpu_status.to_string();
    EXPECT_TRUE(c.cpu == c.reference)
        << op_name(op) << " " << c.reference.type().to_string() << " threads=" << threads
        << " differs from the reference";
  }
}

const DType kAll[] = {DType::f32, DType::f64, DType::f16, DType::bf16,
                      DType::i32, DType::i64, DType::u8,  DType::boolean};

TEST(CreationTest, Full) {
  for (DType dtype : kAll) {
    for (double value : {0.0, 1.5, -3.7, 300.25}) {
      expect_identical(Op::Full, {{"shape", IntList{3, 70000}}, {"value", value}, {"dtype", dtype}}, {});
    }
    expect_identical(Op::Full, {{"shape", IntList{}}, {"value", 2.0}, {"dtype", dtype}}, {});
    expect_identical(Op::Full, {{"shape", IntList{0, 3}}, {"value", 2.0}, {"dtype", dtype}}, {});
  }
}

TEST(CreationTest, Iota) {
  for (DType dtype : kAll) {
    if (dtype == DType::boolean) continue;  // iota needs a numeric dtype.
    for (int64_t axis : {0, 1, 2, -1}) {
      expect_identical(Op::Iota, {{"shape", IntList{4, 300, 5}}, {"axis", axis}, {"dtype", dtype}}, {});
    }
    expect_identical(Op::Iota, {{"shape", IntList{100000}}, {"axis", int64_t{0}}, {"dtype", dtype}}, {});
  }
}

TEST(CreationTest, RandomUniformIsBitwiseTheReference) {
  for (auto [seed, offset] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 0}, {42, 7}, {-1, 1LL << 40}, {123456789012345LL, -3}}) {
    Tensor key = Tensor::from_vector<int64_t>(Shape{2}, {seed, offset});
    for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      expect_identical(Op::RandomUniform, {{"shape", IntList{257, 129}}, {"dtype", dtype}}, {key});
    }
  }
}

TEST(CreationTest, RandomBernoulliIsBitwiseTheReference) {
  Tensor key = Tensor::from_vector<int64_t>(Shape{2}, {9, 3});
  for (DType dtype : kAll) {
    for (double p : {0.0, 0.1, 0.5, 1.0}) {
      expect_identical(Op::RandomBernoulli, {{"shape", IntList{64, 513}}, {"p", p}, {"dtype", dtype}},
                       {key});
    }
  }
}

}  // namespace
}  // namespace weft::cpu
