// The composite kernels against the reference interpreter, in f32 and f64 on 1 and 2
// threads: softmax and log_softmax over every axis (with infinities and NaNs),
// layer_norm over trailing axes, cross_entropy and mse in every reduction mode, and
// cross_entropy's bad-label error with the reference's text.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/cpu/kernel_testing.h"

namespace weft::cpu {
namespace {

using testing::matches_reference;
using testing::random_tensor;
using testing::run_both;

double tol(DType dtype) { return dtype == DType::f32 ? 2e-6 : 1e-12; }

void expect_matches(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs,
                    double tolerance = 0) {
  if (tolerance == 0) tolerance = tol(inputs[0].dtype());
  for (int threads : {1, 2}) {
    std::string why;
    EXPECT_TRUE(matches_reference(op, attrs, inputs, tolerance, &why, threads))
        << op_name(op) << " " << inputs[0].type().to_string() << " threads=" << threads
        << ": " << why;
  }
  testing::Comparison a = run_both(op, attrs, inputs, 2), b = run_both(op, attrs, inputs, 2);
  EXPECT_TRUE(a.cpu == b.cpu) << op_name(op) << " is not deterministic";
}

TEST(CompositeTest, SoftmaxAndLogSoftmax) {
  unsigned seed = 1;
  for (Op op : {Op::Softmax, Op::LogSoftmax}) {
    for (DType dtype : {DType::f32, DType::f64}) {
      for (auto [shape, axis] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
               {{10}, 0}, {{128, 10}, -1}, {{512, 1000}, 1}, {{7, 33}, 0}, {{3, 5, 17}, 1},
               {{64, 3}, -1}}) {
        expect_matches(op, {{"axis", axis}}, {random_tensor({dtype, Shape(shape)}, seed++, -8, 8)});
      }
      // Wide logits: large shifts, tiny probabilities.
      expect_matches(op, {}, {random_tensor({dtype, Shape{16, 200}}, seed++, -80, 80)});
      // Infinities and NaNs take the reference's formula.
      Tensor x = random_tensor({dtype, Shape{6, 20}}, seed++);
      x.set_double(3, std::numeric_limits<double>::infinity());
      x.set_double(25, -std::numeric_limits<double>::infinity());
      x.set_double(47, std::nan(""));
      for (int j = 60; j < 80; ++j) x.set_double(j, -std::numeric_limits<double>::infinity());
      expect_matches(op, {}, {x});
    }
  }
}

TEST(CompositeTest, LayerNorm) {
  unsigned seed = 100;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (auto [shape, axes] : std::vector<std::pair<std::vector<int64_t>, IntList>>{
             {{4, 10}, {-1}}, {{256, 512}, {1}}, {{2, 3, 4, 5}, {-1, -2}}, {{2, 3, 4}, {0, 1, 2}},
             {{3, 17}, {-1}}}) {
      std::vector<int64_t> norm(shape.end() - static_cast<int64_t>(axes.size()), shape.end());
      Tensor x = random_tensor({dtype, Shape(shape)}, seed++, -3, 5);
      Tensor g = random_tensor({dtype, Shape(norm)}, seed++, 0.5, 1.5);
      Tensor b = random_tensor({dtype, Shape(norm)}, seed++);
      for (double eps : {1e-5, 0.1}) expect_matches(Op::LayerNorm, {{"axes", axes}, {"eps", eps}}, {x, g, b});
    }
    // A large mean next to a small spread: the centering is done in f64, so f32 keeps
    // its tolerance; in f64 both backends' mean carries ~1e-14 of rounding, amplified
    // by 1/std ~ 300, and summed in different orders.
    Tensor x = random_tensor({dtype, Shape{8, 64}}, seed++, 100.0, 100.01);
    Tensor g = random_tensor({dtype, Shape{64}}, seed++), b = random_tensor({dtype, Shape{64}}, seed++);
    expect_matches(Op::LayerNorm, {}, {x, g, b}, dtype == DType::f64 ? 1e-9 : 0);
  }
}

TEST(CompositeTest, CrossEntropyAndMse) {
  unsigned seed = 200;
  for (DType dtype : {DType::f32, DType::f64}) {
    for (const char* reduction : {"mean", "sum", "none"}) {
      for (auto [n, c] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {128, 10}, {1000, 37}, {64, 1000}}) {
        Tensor logits = random_tensor({dtype, Shape{n, c}}, seed++, -6, 6);
        Tensor labels = random_tensor({DType::i64, Shape{n}}, seed++, 0, static_cast<double>(c));
        expect_matches(Op::CrossEntropy, {{"reduction", std::string(reduction)}}, {logits, labels});
      }
      for (std::vector<int64_t> shape : {std::vector<int64_t>{5}, {128, 10}, {300, 301}}) {
        Tensor a = random_tensor({dtype, Shape(shape)}, seed++);
        Tensor b = random_tensor({dtype, Shape(shape)}, seed++);
        expect_matches(Op::Mse, {{"reduction", std::string(reduction)}}, {a, b});
      }
    }
    Tensor logits = random_tensor({dtype, Shape{4, 5}}, seed++);
    logits.set_double(7, std::numeric_limits<double>::infinity());
    logits.set_double(12, std::nan(""));
    Tensor labels = Tensor::from_vector<int64_t>(Shape{4}, {0, 1, 2, 3});
    expect_matches(Op::CrossEntropy, {{"reduction", std::string("none")}}, {logits, labels});
  }
}

TEST(CompositeTest, CrossEntropyBadLabelHasTheReferenceMessage) {
  Tensor logits = random_tensor({DType::f32, Shape{4, 5}}, 1);
  for (int64_t bad : {5, -1}) {
    Tensor labels = Tensor::from_vector<int64_t>(Shape{4}, {0, 4, bad, 9});
    testing::Comparison c = run_both(Op::CrossEntropy, {}, {logits, labels});
    ASSERT_TRUE(c.has_kernel);
    EXPECT_EQ(c.cpu_status.to_string(), c.reference_status.to_string());
    EXPECT_NE(c.cpu_status.to_string().find("cross_entropy: label " + std::to_string(bad) +
                                            " at position 2 is out of range for 5 classes"),
              std::string::npos)
        << c.cpu_status.to_string();
  }
}

}  // namespace
}  // namespace weft::cpu
