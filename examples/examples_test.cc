// Runs the example programs as a user would and checks what they print and write:
// the showcase's dumped IR passes `weftc check` and its DOT renders with graphviz; the
// other examples build and report the parameter counts PyTorch gives for the same
// architectures.
#include <gtest/gtest.h>

#include "tests/testing/subprocess.h"
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace {

using Result = weft::testing::CommandResult;

Result run(const std::string& cmd) { return weft::testing::run_command(cmd); }

std::string tmp() { return weft::testing::test_tmpdir(); }

TEST(Examples, ShowcaseDumpsCheckableIrAndRenderableDot) {
  std::string dir = tmp() + "/showcase";
  Result r = run("examples/showcase --dump=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("labels: encoder head"), std::string::npos) << r.out;
  Result check = run("tools/weftc/weftc check " + dir + "/showcase.wir");
  EXPECT_EQ(check.exit_code, 0) << check.out;
  Result dot = run("dot -Tsvg " + dir + "/showcase.dot -o " + dir + "/showcase.svg");
  EXPECT_EQ(dot.exit_code, 0) << dot.out;
}

// The viewer from C++: a labelled network and its Adam training step.
TEST(Examples, VizTrainingStepWritesTheViewerAndTheMemoryPicture) {
  std::string dir = tmp() + "/viz";
  Result r = run("examples/viz_training_step --out=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Result model = run("grep -c 'class=\"cluster\" data-cluster=' " + dir + "/model.html");
  EXPECT_EQ(model.out, "2\n");  // encoder, head
  Result tag = run("grep -c '#encoder.hidden' " + dir + "/model.html");
  EXPECT_EQ(tag.exit_code, 0) << tag.out;
  // The step shows gradients and the optimizer's slots; the picture is an SVG.
  for (const char* what : {"kind-gradient", "\"kind\":\"optimizer state\"", "data-tab=\"memory\""}) {
    Result found = run("grep -c -F '" + std::string(what) + "' " + dir + "/train_step.html");
    EXPECT_EQ(found.exit_code, 0) << what;
  }
  Result svg = run("head -c 4 " + dir + "/train_step_memory.svg");
  EXPECT_EQ(svg.out, "<svg");
}

// --help says what each program does and writes, exit status 0; another flag is the usage
// line and exit status 1.
TEST(Examples, ShowcaseAndVizTrainingStepHelp) {
  struct Expected {
    const char* program;
    const char* usage;
    const char* about;   // --help's second line starts so
    const char* writes;  // and names this
  };
  for (const Expected& e :
       {Expected{"showcase", "usage: showcase [--dump=DIR]\n", "Builds one graph that uses every FlowBuilder method",
                 "DIR/showcase.wir (for `weftc check`)"},
        Expected{"viz_training_step", "usage: viz_training_step --out=DIR\n",
                 "Draws a labelled network and its Adam training step",
                 "DIR/train_step_memory.svg (the step's memory plan)"}}) {
    Result help = run("examples/" + std::string(e.program) + " --help");
    EXPECT_EQ(help.exit_code, 0) << help.out;
    EXPECT_EQ(help.out.rfind(std::string(e.usage) + e.about, 0), 0u) << help.out;
    EXPECT_NE(help.out.find(e.writes), std::string::npos) << help.out;
    Result bad = run("examples/" + std::string(e.program) + " --bogus");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_EQ(bad.out, e.usage);
  }
}

// The examples that take no flags (examples/no_flags.h): --help says what they print,
// exit status 0; an argument is the usage line, exit status 1.
TEST(Examples, CnnAndTransformerBlockTakeNoFlags) {
  for (const auto& [program, about] : {std::pair{"cnn", "Builds a small CNN for 28x28x1 images"},
                                       std::pair{"transformer_block", "Builds a transformer encoder block"}}) {
    Result help = run("examples/" + std::string(program) + " --help");
    EXPECT_EQ(help.exit_code, 0) << help.out;
    EXPECT_EQ(help.out.rfind("usage: " + std::string(program) + "\n" + about, 0), 0u) << help.out;
    Result bad = run("examples/" + std::string(program) + " --epochs=3");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_EQ(bad.out, "usage: " + std::string(program) + "\n");
  }
}

// Parameter counts of the same architectures in PyTorch (sum of p.numel()).
TEST(Examples, ParameterCountsMatchPyTorch) {
  Result readme = run("examples/readme_model");
  ASSERT_EQ(readme.exit_code, 0) << readme.out;
  EXPECT_NE(readme.out.find("parameters: 269834\n"), std::string::npos);
  // The README quotes the location the residual Linear's nodes carry: its builder call.
  EXPECT_NE(readme.out.find("loc(\"examples/readme_model.cc\":17:36, \"Linear(256->256)\")"), std::string::npos)
      << readme.out;
  Result cnn = run("examples/cnn");
  ASSERT_EQ(cnn.exit_code, 0) << cnn.out;
  EXPECT_NE(cnn.out.find("parameters: 421834\n"), std::string::npos) << cnn.out.substr(cnn.out.size() - 200);
  // nn.TransformerEncoderLayer(128, 4, 512): 198272 in both norm_first settings.
  Result block = run("examples/transformer_block");
  ASSERT_EQ(block.exit_code, 0) << block.out;
  size_t first = block.out.find("parameters: 198272\n");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(block.out.find("parameters: 198272\n", first + 1), std::string::npos);
}

}  // namespace
