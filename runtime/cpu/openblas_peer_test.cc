// restart_without_openblas_handicap: the program it starts has neither OPENBLAS_CORETYPE
// nor OPENBLAS_L2_SIZE and the rest of the environment; with neither set it returns; a
// program that cannot be started is reported. Each case runs in a forked child, so the
// test's own environment keeps both throughout.
#include "runtime/cpu/openblas_peer.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <string>

namespace weft::cpu {
namespace {

struct Child {
  int status = -1;
  std::string out;
};

/// Runs `body` in a forked child whose stdout comes back through a pipe.
Child in_child(const std::function<void()>& body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    body();
    std::fflush(nullptr);
    _exit(0);
  }
  close(fds[1]);
  Child c;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) c.out.append(buf, size_t(n));
  close(fds[0]);
  waitpid(pid, &c.status, 0);
  return c;
}

bool has_var(const std::string& env_output, const std::string& var) {
  return ("\n" + env_output).find("\n" + var + "=") != std::string::npos;
}

class Restart : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("OPENBLAS_CORETYPE", "Haswell", /*overwrite=*/0);
    setenv("OPENBLAS_L2_SIZE", "512", /*overwrite=*/0);
    setenv("WEFT_OPENBLAS_PEER_TEST_KEPT", "yes", /*overwrite=*/1);
  }
  void TearDown() override {
    EXPECT_NE(std::getenv("OPENBLAS_CORETYPE"), nullptr);
    EXPECT_NE(std::getenv("OPENBLAS_L2_SIZE"), nullptr);
  }
};

TEST_F(Restart, StartsTheProgramAgainWithoutBoth) {
  EXPECT_TRUE(openblas_handicap_set());
  Child c = in_child([] {
    char* argv[] = {const_cast<char*>("env"), nullptr};
    restart_without_openblas_handicap(argv, /*exe=*/"/usr/bin/env");
    std::printf("returned\n");
  });
  ASSERT_TRUE(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) << c.out;
  EXPECT_FALSE(has_var(c.out, "OPENBLAS_CORETYPE")) << c.out;
  EXPECT_FALSE(has_var(c.out, "OPENBLAS_L2_SIZE")) << c.out;
  EXPECT_TRUE(has_var(c.out, "WEFT_OPENBLAS_PEER_TEST_KEPT")) << c.out;
  EXPECT_EQ(c.out.find("returned"), std::string::npos) << c.out;
}

TEST_F(Restart, ReturnsWhenNeitherIsSet) {
  Child c = in_child([] {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    char* argv[] = {const_cast<char*>("env"), nullptr};
    restart_without_openblas_handicap(argv, /*exe=*/"/usr/bin/env");
    std::printf("returned\n");
  });
  ASSERT_TRUE(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) << c.out;
  EXPECT_EQ(c.out, "returned\n");
}

TEST_F(Restart, OnlyOneSetIsEnough) {
  Child c = in_child([] {
    unsetenv("OPENBLAS_CORETYPE");
    char* argv[] = {const_cast<char*>("env"), nullptr};
    restart_without_openblas_handicap(argv, /*exe=*/"/usr/bin/env");
    std::printf("returned\n");
  });
  EXPECT_FALSE(has_var(c.out, "OPENBLAS_L2_SIZE")) << c.out;
  EXPECT_EQ(c.out.find("returned"), std::string::npos) << c.out;
}

TEST_F(Restart, AProgramThatCannotStartExits127) {
  Child c = in_child([] {
    char* argv[] = {const_cast<char*>("missing"), nullptr};
    restart_without_openblas_handicap(argv, /*exe=*/"/nonexistent/program");
    std::printf("returned\n");
  });
  ASSERT_TRUE(WIFEXITED(c.status));
  EXPECT_EQ(WEXITSTATUS(c.status), 127);
  EXPECT_EQ(c.out, "");
}

}  // namespace
}  // namespace weft::cpu
