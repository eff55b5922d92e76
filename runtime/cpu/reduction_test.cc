// The reduction kernels against the reference interpreter: sum, mean, max, min over axis
// subsets (negative axes, keepdims, all axes) and argmax, in f32 and f64, on 1 and 2
// threads, with NaNs for the NaN-propagating ops.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/cpu/kernel_testing.h"

namespace weft::cpu {
namespace {
namespace reduction_test {  // this file's names, apart in its package's unity test

using testing::matches_reference;
using testing::random_tensor;
using testing::run_both;

// Matches the reference on 1 and 2 threads, and two runs give identical bits.
void expect_matches(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs, double tol) {
  for (int threads : {1, 2}) {
    std::string why;
    EXPECT_TRUE(matches_reference(op, attrs, inputs, tol, &why, threads))
        << op_name(op) << " " << inputs[0].type().to_string() << " threads=" << threads
        << ": " << why;
  }
  testing::Comparison a = run_both(op, attrs, inputs, 2), b = run_both(op, attrs, inputs, 2);
  EXPECT_TRUE(a.cpu == b.cpu) << op_name(op) << " is not deterministic";
}

struct Case {
  std::vector<int64_t> shape;
  std::optional<IntList> axes;
};

std::vector<Case> cases() {
  return {
      {{7}, std::nullopt},
      {{3, 5}, IntList{1}},
      {{3, 5}, IntList{0}},
      {{300, 1000}, IntList{-1}},         // Inner: rows over two threads.
      {{128, 256}, IntList{0}},           // Outer: a bias gradient's column sums.
      {{4, 6, 33}, IntList{1}},           // [outer, r, inner].
      {{4, 6, 5, 7}, IntList{0, 2}},      // Two separate reduced groups: general path.
      {{4, 6, 5, 7}, IntList{-1, 1}},     // Negative axis, general path.
      {{2, 3, 4, 5}, IntList{1, 2}},      // Adjacent axes merge.
      {{2, 1, 4, 1}, IntList{1, 3}},      // Only size-1 axes reduced.
      {{6, 9, 4}, std::nullopt},          // All axes.
      {{64, 3000}, IntList{0, 1}},
      {{0, 4}, IntList{0}},               // Empty reduced axis: sum 0, mean NaN.
      // Batch-norm statistics over N, H and W of NCHW: the outer+inner path.
      {{32, 16, 32, 32}, IntList{0, 2, 3}},
      {{8, 3, 5, 7}, IntList{0, 2, 3}},   // Rows shorter than the 16 lanes.
      {{4, 33, 17, 1}, IntList{0, 2}},    // A trailing size-1 axis; odd channel count.
      {{3, 2, 40}, IntList{-1, 0}},
      {{2, 5, 1, 1}, IntList{0, 2, 3}},   // Only N is left to reduce: the columns path.
  };
}

TEST(ReductionTest, MatchesReference) {
  unsigned seed = 1;
  for (Op op : {Op::Sum, Op::Mean, Op::Max, Op::Min}) {
    for (DType dtype : {DType::f32, DType::f64}) {
      for (const Case& c : cases()) {
        if ((op == Op::Max || op == Op::Min) && c.shape[0] == 0) continue;
        for (bool keepdims : {false, true}) {
          Attrs attrs{{"keepdims", keepdims}};
          if (c.axes) attrs["axes"] = *c.axes;
          Tensor x = random_tensor({dtype, Shape(c.shape)}, seed++, -2.0, 3.0);
          expect_matches(op, attrs, {x}, dtype == DType::f32 ? 1e-6 : 1e-12);
        }
      }
    }
  }
}

// [a, c, b] reduced over a and b takes the outer+inner path, not the general one.
TEST(ReductionTest, ChannelStatisticsUseTheOuterInnerPath) {
  const Tensor x = random_tensor({DType::f32, Shape{4, 3, 6, 5}}, 3);
  LibraryCall call;
  call.node.op = Op::Sum;
  call.node.attrs = {{"axes", IntList{0, 2, 3}}, {"keepdims", true}};
  call.operand_types = {x.type()};
  call.result_type = {DType::f32, {1, 3, 1, 1}};
  std::vector<float> out(3);
  auto k = make_library_kernel(call, {x.raw_data()}, out.data());
  ASSERT_TRUE(k.ok() && *k);
  EXPECT_NE((*k)->describe().find("outer+inner"), std::string::npos) << (*k)->describe();
}

TEST(ReductionTest, MaxAndMinPropagateNaN) {
  for (Op op : {Op::Max, Op::Min}) {
    for (const Case& c : cases()) {
      if (c.shape[0] == 0) continue;
      Tensor x = random_tensor({DType::f32, Shape(c.shape)}, 7);
      for (int64_t i = 3; i < x.numel(); i += 97) x.data<float>()[i] = std::nanf("");
      Attrs attrs;
      if (c.axes) attrs["axes"] = *c.axes;
      expect_matches(op, attrs, {x}, 0.0);
    }
  }
}

TEST(ReductionTest, ArgmaxMatchesReference) {
  unsigned seed = 100;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (auto [shape, axis] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
             {{9}, 0}, {{4, 10}, 1}, {{4, 10}, 0}, {{3, 7, 130}, 1}, {{3, 7, 130}, -1},
             {{512, 100}, -1}, {{100, 512}, 0}}) {
      for (bool keepdims : {false, true}) {
        Tensor x = random_tensor({dtype, Shape(shape)}, seed++);
        // Ties: the first maximum wins.
        for (int64_t i = 0; i < x.numel(); ++i) x.set_double(i, std::round(x.get_double(i) * 3));
        expect_matches(Op::Argmax, {{"axis", axis}, {"keepdims", keepdims}}, {x}, 0.0);
        // A NaN counts as the maximum, the first NaN wins.
        for (int64_t i = 5; i < x.numel(); i += 37) x.set_double(i, std::nan(""));
        expect_matches(Op::Argmax, {{"axis", axis}, {"keepdims", keepdims}}, {x}, 0.0);
      }
    }
  }
}

TEST(ReductionTest, InfinitiesAndEmptyAxisErrors) {
  Tensor x = random_tensor({DType::f32, Shape{4, 8}}, 3);
  x.data<float>()[2] = std::numeric_limits<float>::infinity();
  x.data<float>()[9] = -std::numeric_limits<float>::infinity();
  for (Op op : {Op::Sum, Op::Mean, Op::Max, Op::Min}) {
    expect_matches(op, {{"axes", IntList{1}}}, {x}, 1e-6);
  }
  // max over an empty axis has no library kernel: the reference reports it.
  testing::Comparison c = run_both(Op::Max, {{"axes", IntList{0}}},
                                   {Tensor(Type{DType::f32, Shape{0, 3}})});
  EXPECT_FALSE(c.has_kernel);
  EXPECT_NE(c.reference_status.to_string().find("reduction over an empty axis"),
            std::string::npos);
}

TEST(ReductionTest, OtherDTypesHaveNoKernel) {
  testing::Comparison c =
      run_both(Op::Sum, {}, {random_tensor({DType::i32, Shape{4, 3}}, 1, -5, 5)});
  EXPECT_FALSE(c.has_kernel);
}

}  // namespace reduction_test
}  // namespace
}  // namespace weft::cpu
