// bench/process.h: a peer (the PyTorch side, anything loading OpenBLAS to be measured
// against) is started without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, while the process
// that starts it (the suite; here the test) keeps both, and so does a process started as
// weft's (the workers).
#include "bench/process.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace weft::bench {
namespace {

std::string tmp(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

/// The value of `var` in `env`'s output (one `K=V` per line), or "(unset)".
std::string value_in(const std::string& env_output, const std::string& var) {
  const std::string text = "\n" + env_output, key = "\n" + var + "=";
  size_t at = text.find(key);
  if (at == std::string::npos) return "(unset)";
  at += key.size();
  return text.substr(at, text.find('\n', at) - at);
}

class PeerEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    // As the development and CI machines set them (bazel test starts without them).
    setenv("OPENBLAS_CORETYPE", "Haswell", /*overwrite=*/0);
    setenv("OPENBLAS_L2_SIZE", "512", /*overwrite=*/0);
    setenv("WEFT_PROCESS_TEST_KEPT", "yes", /*overwrite=*/1);
    coretype_ = std::getenv("OPENBLAS_CORETYPE");
    l2_size_ = std::getenv("OPENBLAS_L2_SIZE");
  }
  std::string coretype_, l2_size_;
};

TEST_F(PeerEnvironment, APeerStartsWithoutBothWhileThisProcessKeepsThem) {
  ProcessResult peer = run_process({"/usr/bin/env"}, {{"OMP_WAIT_POLICY", "PASSIVE"}},
                                   peer_unset(), tmp("peer.stderr"));
  ASSERT_EQ(peer.exit_code, 0) << peer.err;
  EXPECT_EQ(value_in(peer.out, "OPENBLAS_CORETYPE"), "(unset)") << peer.out;
  EXPECT_EQ(value_in(peer.out, "OPENBLAS_L2_SIZE"), "(unset)") << peer.out;
  // The rest of the environment arrives, and the call's own settings.
  EXPECT_EQ(value_in(peer.out, "WEFT_PROCESS_TEST_KEPT"), "yes") << peer.out;
  EXPECT_EQ(value_in(peer.out, "OMP_WAIT_POLICY"), "PASSIVE") << peer.out;
  // Only the child's environment changed.
  ASSERT_NE(std::getenv("OPENBLAS_CORETYPE"), nullptr);
  ASSERT_NE(std::getenv("OPENBLAS_L2_SIZE"), nullptr);
  EXPECT_EQ(std::string(std::getenv("OPENBLAS_CORETYPE")), coretype_);
  EXPECT_EQ(std::string(std::getenv("OPENBLAS_L2_SIZE")), l2_size_);
}

TEST_F(PeerEnvironment, WeftsProcessesKeepBoth) {
  ProcessResult weft = run_process({"/usr/bin/env"}, {}, {}, tmp("weft.stderr"));
  ASSERT_EQ(weft.exit_code, 0) << weft.err;
  EXPECT_EQ(value_in(weft.out, "OPENBLAS_CORETYPE"), coretype_) << weft.out;
  EXPECT_EQ(value_in(weft.out, "OPENBLAS_L2_SIZE"), l2_size_) << weft.out;
}

TEST(PeerUnset, AddsBothToTheCallersList) {
  EXPECT_EQ(peer_unset(), (std::set<std::string>{"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}));
  EXPECT_EQ(peer_unset({"OMP_NUM_THREADS", "OPENBLAS_CORETYPE"}),
            (std::set<std::string>{"OMP_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}));
}

}  // namespace
}  // namespace weft::bench
