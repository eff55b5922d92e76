// End-to-end tests of the weftc binary, run as a user would (a subprocess in the
// runfiles tree), checking its exit status, what it printed and what it wrote.
// What every command shares: paths against $BUILD_WORKING_DIRECTORY, checked integer
// flags, directories and file-size limits named as such, --help and the usage.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tools/weftc/weftc_testing.h"

namespace weft {
namespace {
namespace weftc_test {  // this file's names, apart in its package's unity test

using namespace weftc_testing;

TEST(Weftc, ResolvesRelativePathsAgainstBuildWorkingDirectory) {
  // `bazel run` starts weftc in its runfiles tree; relative paths are the user's.
  std::string cwd = temp_dir() + "/user_cwd";
  ::mkdir(cwd.c_str(), 0755);
  std::string wir;
  {
    std::ifstream in(kExample + "mlp.wir");
    wir.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(cwd + "/model.wir") << wir;
  Result r = weftc("check model.wir -o typed.wir", "BUILD_WORKING_DIRECTORY=" + cwd);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "model.wir: ok: @mlp, 7 inputs, 13 nodes, 2 outputs\n");
  std::ifstream typed(cwd + "/typed.wir");
  EXPECT_TRUE(typed.good());
}

// Every integer flag is read by one checked parser: a value that does not fit is refused,
// never wrapped (4294967296 used to become output 0 and succeed).
TEST(Weftc, IntegerFlagsAreCheckedNotWrapped) {
  std::string wir = write_temp("g.wir",
                               "graph @g(%x: f32[3]) {\n"
                               "  %l = sum(%x)\n"
                               "  return %l\n"
                               "}\n");
  for (const char* value : {"4294967296", "-1", "1.5", "99999999999999999999", "+0"}) {
    Result r = weftc("grad " + wir + " --wrt x --output=" + value);
    EXPECT_EQ(r.exit_code, 1) << value;
    EXPECT_EQ(r.out, std::string("error: weftc grad: --output expects a whole number in [0, "
                                 "2147483647], got '") + value + "'\n");
  }
  const std::string profile = "profile " + kExample + "mlp.wir" + example_inputs();
  for (const std::string flag : {"steps", "warmup", "top"}) {
    Result r = weftc(profile + " --" + flag + "=4294967297");
    EXPECT_EQ(r.exit_code, 1) << flag;
    const std::string low = flag == "warmup" ? "0" : "1";  // no warmup times the cold steps
    EXPECT_EQ(r.out, "error: weftc profile: --" + flag + " expects a whole number in [" + low +
                         ", 1000000000], got '4294967297'\n");
  }
}

// An empty value is refused by the one parser, for every flag that takes one: `-o=` wrote a
// temporary file it then could not rename ("cannot rename .tmp.N.0 into place"),
// `check --backend=` checked nothing and succeeded.
TEST(Weftc, AnEmptyFlagValueIsRefused) {
  const std::string wir = kExample + "mlp.wir";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"check " + wir + " -o=", "check: flag --out"},
      {"check " + wir + " --backend=", "check: flag --backend"},
      {"dump " + wir + " --after=", "dump: flag --after"},
      {"grad " + wir + " --wrt w1 --output=", "grad: flag --output"},
  };
  for (const auto& [command, flag] : cases) {
    const Result r = weftc(command);
    EXPECT_EQ(r.exit_code, 1) << command;
    const std::string name = flag.substr(0, flag.find(':'));
    EXPECT_EQ(r.out, "error: weftc " + flag + " needs a value, got an empty one (see weftc " + name +
                         " --help)\n")
        << command;
  }
}

// A directory where a file is expected is named as one, for the graph and for an input
// (they used to fail with "unexpected end of file" and "bad magic").
TEST(Weftc, ADirectoryGivenAsAFileIsNamedAsOne) {
  const std::string dir = temp_dir() + "/folder.wir";
  std::filesystem::create_directories(dir);
  Result r = weftc("check " + dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, dir + ": error: cannot read: it is a directory, not a file\n");
  std::string inputs = " --input x=" + dir;
  for (const char* name : {"labels", "w1", "b1", "w2", "b2", "lr"}) {
    inputs += std::string(" --input ") + name + "=" + kExample + name + ".npy";
  }
  r = weftc("run " + kExample + "mlp.wir" + inputs + " --out " + temp_dir() + "/dir_out");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, dir + ": error: cannot read: it is a directory, not a file\n");
}

// Under a file-size limit a write fails with an error naming the file, and no temporary
// file is left (SIGXFSZ used to kill weftc with no message, leaving OUT.tmp.*).
TEST(Weftc, FileSizeLimitIsAnErrorNotASignal) {
  const std::string dir = temp_dir() + "/fsize";
  ::mkdir(dir.c_str(), 0755);
  Result r = weftc("dump " + kExample + "mlp.wir -o " + dir + "/big.wir", "ulimit -f 1 &&");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out.rfind(dir + "/big.wir: error: write to " + dir + "/big.wir.tmp.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" failed: File too large (" + dir + "/big.wir was left as it was)\n"), std::string::npos)
      << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

// cuBLAS (with cuBLASLt: about 0.8 s of CPU to load) is opened when the cuda backend first
// calls it, not when weftc starts (third_party/cublas_lazy.h).
TEST(Weftc, StartsWithoutLoadingCublas) {
  Result r = weftc("check " + kExample + "mlp.wir", "LD_DEBUG=libs");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("libLLVM"), std::string::npos) << "LD_DEBUG lists the libraries loaded";
  EXPECT_EQ(r.out.find("libcublas"), std::string::npos) << r.out;
}

// The README's promise: every subcommand `weftc --help` lists answers `--help` with its
// usage, exit status 0.
TEST(Weftc, EveryCommandHasHelp) {
  Result r = weftc("--help");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const size_t list = r.out.find("\ncommands:\n");
  ASSERT_NE(list, std::string::npos) << r.out;
  std::istringstream lines(r.out.substr(list + 11));
  std::vector<std::string> commands;
  for (std::string line; std::getline(lines, line) && line.rfind("  ", 0) == 0;) {
    commands.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  EXPECT_EQ(commands.size(), 9u) << r.out;
  for (const std::string& command : commands) {
    Result help = weftc(command + " --help");
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_EQ(help.out.rfind("usage: weftc " + command + " ", 0), 0u) << help.out;
  }
}

TEST(Weftc, HelpAndUsage) {
  for (const char* command : {"check", "dump", "run", "grad", "migrate"}) {
    Result r = weftc(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out.rfind(std::string("usage: weftc ") + command, 0), 0u) << r.out;
  }
  EXPECT_EQ(weftc("--help").exit_code, 0);
  Result r = weftc("frobnicate");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("error: unknown command 'frobnicate'", 0), 0u) << r.out;
  r = weftc("check --bogus x.wir");
  EXPECT_EQ(r.out,
            "error: weftc check: unknown flag '--bogus'; accepted flags: --out (-o), --backend "
            "(see weftc check --help)\n");
}

}  // namespace weftc_test
}  // namespace
}  // namespace weft
