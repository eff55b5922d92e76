#include "passes/dce.h"

#include <gtest/gtest.h>

#include "passes/pass_testing.h"

namespace weft {
namespace {

TEST(DceTest, RemovesWhatReachesNoOutputOrAssign) {
  DcePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(
graph @f(%x: f32[4], %s: f32[4] {state}) {
  %a = exp(%x)
  %b = neg(%x)
  %c = tanh(%b)
  %d = add(%s, %x)
  assign(%s, %d)
  %e = full() {shape=[4], value=1.0}
  return %a
}
)"),
            R"(graph @f(%x: f32[4], %s: f32[4] {state}) {
  %a = exp(%x)
  %d = add(%s, %x)
  assign(%s, %d)
  return %a
}
)");
}

TEST(DceTest, KeepsTypesAndDeclaredSignature) {
  DcePass pass;
  EXPECT_EQ(run_pass_on_text(pass, R"(graph @f(%x: f32[4], %unused: f32[2]) -> (f32[4]) {
  %a = exp(%x) : f32[4]
  %b = log(%a) : f32[4]
  return %a
}
)"),
            R"(graph @f(%x: f32[4], %unused: f32[2]) -> (f32[4]) {
  %a = exp(%x) : f32[4]
  return %a
}
)");
}

TEST(DceTest, NoChangeWhenEverythingIsUsed) {
  DcePass pass;
  const char* live = R"(graph @f(%x: f32[4], %w: f32[4] {param}) {
  %a = exp(%x)
  %b = mul(%a, %w)
  assign(%w, %b)
  return %a
}
)";
  EXPECT_EQ(run_pass_on_text(pass, live), std::string(live) + "(no change)\n");
}

}  // namespace
}  // namespace weft
