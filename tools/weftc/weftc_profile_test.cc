// End-to-end tests of the weftc binary, run as a user would (a subprocess in the
// runfiles tree), checking its exit status, what it printed and what it wrote.
// `weftc profile`: every kernel timed, with its GFLOP/s and GB/s.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "tools/weftc/weftc_testing.h"

namespace weft {
namespace {
namespace weftc_profile_test {  // this file's names, apart in its package's unity test

using namespace weftc_testing;

TEST(Weftc, ProfileTimesEveryKernel) {
  Result r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --steps=4 --top=3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("program @mlp on ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n4 steps, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GFLOP/s   GB/s"), std::string::npos) << r.out;
  // Three rows under the header: the --top.
  const size_t header = r.out.find("GFLOP/s   GB/s");
  EXPECT_EQ(std::count(r.out.begin() + header, r.out.end(), '\n'), 4) << r.out;
  // --html: the viewer with the nodes filled by their share of the step.
  const std::string html = temp_dir() + "/profile.html";
  r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --steps=2 --html=" + html);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + html + "\n"), std::string::npos) << r.out;
  std::ifstream page(html);
  std::string text((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<title>profile of @mlp"), std::string::npos);
  EXPECT_GE(std::count(text.begin(), text.end(), '%'), 1);
  EXPECT_NE(text.find(" timed"), std::string::npos);
  r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --steps=0");
  EXPECT_EQ(r.out, "error: weftc profile: --steps expects a whole number in [1, 1000000000], got '0'\n");
  // No warmup times the first, cold steps (--warmup=0 was refused).
  r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --steps=1 --warmup=0");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --warmup=-1");
  EXPECT_EQ(r.out, "error: weftc profile: --warmup expects a whole number in [0, 1000000000], got '-1'\n");
}

// --precision=bf16: the two GEMMs run in bf16 (oneDNN's bf16 matmul), each row says so,
// and a line per dtype gives their achieved GFLOP/s together; at f32 they are f32's.
TEST(Weftc, ProfileShowsEachGemmsDtype) {
  Result r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --steps=2 --precision=bf16");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\n  bf16 contractions: 2 invocations, "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" f32 contractions:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GFLOP/s   GB/s  gemm  result\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  bf16  bf16[8,32]  %a\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  bf16  bf16[8,10]  %logits\n"), std::string::npos) << r.out;
  r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --steps=2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\n  f32 contractions: 2 invocations, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  f32   f32[8,32]  %a\n"), std::string::npos) << r.out;
}

}  // namespace weftc_profile_test
}  // namespace
}  // namespace weft
