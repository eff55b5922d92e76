// The AOT generator's own errors (tools/aot/generate_main.cc: its flags, the object
// form's --object, a file it cannot write), pinned on scheduled_momentum's generator
// (this package's weft_library), run as the weft_library macro runs it; and the words of
// the header it writes.

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace {

struct GeneratorRun {
  int status;
  std::string output;  ///< stdout and stderr.
};

GeneratorRun generate(const std::string& flags) {
  const std::string cmd = "tools/aot/scheduled_momentum_generator " + flags + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  GeneratorRun run{-1, ""};
  if (pipe == nullptr) return run;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe)) run.output.append(buf, n);
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// Every path flag but --object, into the test's temporary folder, and the options the
// generator needs.
std::string flags() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  std::string f = "--name=x --class=ns::X --include=x.h";
  for (const char* out : {"header=x.h", "source=x.cc", "factory=x_factory.cc", "step_source=x_step.cc",
                          "eval_source=x_eval.cc", "weights=x_weights.inc"}) {
    const std::string o = out;
    f += " --" + o.substr(0, o.find('=')) + "=" + dir + "/" + o.substr(o.find('=') + 1);
  }
  return f + " --batch=8 --loss=cross_entropy --optimizer=sgd --lr=0.1";
}

TEST(GeneratorErrors, APathFlagIsMissing) {
  const GeneratorRun run = generate("");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.output,
            "weft AOT generator: --name=... is required (the weft_library macro passes it)\n");
}

TEST(GeneratorErrors, TheObjectFormNeedsObject) {
  const GeneratorRun run = generate(flags());
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.output, "weft AOT generator: --object=... is required for --backend=cpu\n");
}

TEST(GeneratorErrors, TheModuleFormWritesNoObject) {
  const GeneratorRun run = generate(flags() + " --backend=cuda --object=x.o");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.output, "weft AOT generator: --backend=cuda writes no object file: drop --object\n");
}

TEST(GeneratorErrors, AFileItCannotWrite) {
  const GeneratorRun run = generate(flags() + " --object=/nonexistent-weft-dir/x.o");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.output.rfind("weft AOT generator: /nonexistent-weft-dir/x.o: error: cannot create "
                             "the temporary file /nonexistent-weft-dir/x.o.tmp.",
                             0),
            0u)
      << run.output;
}

// Not an error, but pinned on the same run: the header's comments count a buffer's
// elements in words ("(1 element)", not "(1 elements)").
TEST(GeneratorErrors, TheHeaderCountsElementsInWords) {
  std::string f = flags();
  f.replace(f.find("--batch=8"), 9, "--batch=1");
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  const GeneratorRun run = generate(f + " --object=" + dir + "/x.o");
  ASSERT_EQ(run.status, 0) << run.output;
  std::ifstream in(dir + "/x.h");
  std::stringstream header;
  header << in.rdbuf();
  EXPECT_NE(header.str().find("/// \"weft.target\": i64[1] (1 element).\n"), std::string::npos) << header.str();
  EXPECT_NE(header.str().find("/// \"x\": f32[1,6] (6 elements).\n"), std::string::npos);
}

}  // namespace
