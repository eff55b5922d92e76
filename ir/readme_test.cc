// The top-level README's count of the op table against the table itself (it said 71
// after two ops were added): the README names `ir/ops.def: N ops`, N must be kNumOps.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "ir/op.h"

namespace weft {
namespace {

TEST(Readme, CountsTheOpTable) {
  std::ifstream in("README.md");
  ASSERT_TRUE(in.good()) << "README.md is the test's data";
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string claim = "(`ir/ops.def`: ";
  const size_t at = text.find(claim);
  ASSERT_NE(at, std::string::npos) << "the README no longer counts the op table";
  EXPECT_EQ(text.substr(at + claim.size(), text.find(' ', at + claim.size()) - at - claim.size()),
            std::to_string(kNumOps));
}

}  // namespace
}  // namespace weft
