// Issue #30's accuracy test, bounded: the batch-norm CNN (cnn --bn) trained one full epoch
// (937 steps of 64) in bf16 on the cpu backend reaches the f32 run's test accuracy.
//
// Measured on this machine with the same flags (seed 0, 2 threads, 2026-11-29): f32
// 0.8894 after the epoch (0.8871 in bench/RESULTS.md's 10-epoch f32 run), bf16 0.8875.
// The threshold, 0.88, is 0.009 below the f32 run; a step that does not train in bf16
// (or trains worse than rounding explains) falls well under it. The full run, which
// reaches the 0.916 at epoch 6, takes 10 epochs: bench/RESULTS.md has it.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "tests/testing/subprocess.h"

namespace {

TEST(FashionMnistBf16, BatchNormCnnReachesF32sAccuracyAfterOneEpoch) {
  const weft::testing::CommandResult r =
      weft::testing::run_command("examples/fashion_mnist/cnn --bn --epochs=1 --precision=bf16");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("epoch 1/1: .* test accuracy: (0\\.\\d{4})"))) << r.out;
  const double accuracy = std::stod(m[1].str());
  std::printf("bf16 test accuracy after one epoch: %.4f\n", accuracy);
  EXPECT_GE(accuracy, 0.88) << r.out;
}

}  // namespace
