// End-to-end tests of the weftc binary, run as a user would (a subprocess in the
// runfiles tree), checking its exit status, what it printed and what it wrote.
// `weftc grad`: gradient graphs that run, loops reversed, and torch.autograd's fixtures.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ir/text.h"
#include "tools/weftc/weftc_testing.h"

namespace weft {
namespace {
namespace weftc_grad_test {  // this file's names, apart in its package's unity test

using namespace weftc_testing;

TEST(Weftc, GradWritesAGradientGraphThatRuns) {
  std::string wir = write_temp("f.wir",
                               "graph @f(%x: f32[2,3], %w: f32[3] {param}, %n: i64[2]) {\n"
                               "  %p = mul(%x, %w)\n"
                               "  %l = sum(%p)\n"
                               "  return %l\n"
                               "}\n");
  std::string out = temp_dir() + "/f_grad.wir";
  Result r = weftc("grad " + wir + " --wrt w,x -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = weftc("check " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("@f_grad, 3 inputs"), std::string::npos) << r.out;

  r = weftc("grad " + wir + " --wrt n -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, wir + ":1:44: error: cannot differentiate w.r.t. %n: it is i64[2], and only "
                         "floating-point inputs have gradients\n");
  r = weftc("grad " + wir + " -o " + out);
  EXPECT_EQ(r.out, "error: weftc grad: --wrt NAME,NAME,... is required\n");
  r = weftc("grad " + wir + " --wrt w --output=x");
  EXPECT_EQ(r.out, "error: weftc grad: --output expects a whole number in [0, 2147483647], got 'x'\n");
}

// A loop's gradient is a loop running the other way (autodiff/scan_grad.cc): the output
// checks and prints its reversed scan (its values: autodiff:scan_grad_test).
TEST(Weftc, GradOfALoopIsAReversedLoop) {
  std::string wir = write_temp("rnn.wir",
                               "graph @rnn(%w: f32[4,4] {param}, %h0: f32[2,4], %xs: f32[5,2,4]) {\n"
                               "  %h, %ys = scan(%w, %h0, %xs) {carries=1, consts=1, length=5} : f32[2,4], f32[5,2,4] ({\n"
                               "    ^cell(%cw: f32[4,4], %ch: f32[2,4], %cx: f32[2,4]):\n"
                               "      %m = matmul(%ch, %cw) : f32[2,4]\n"
                               "      %a = add(%m, %cx) : f32[2,4]\n"
                               "      %n = tanh(%a) : f32[2,4]\n"
                               "      return %n, %n\n"
                               "  })\n"
                               "  %q = mul(%ys, %ys)\n"
                               "  %l = sum(%q)\n"
                               "  return %l\n"
                               "}\n");
  std::string out = temp_dir() + "/rnn_grad.wir";
  Result r = weftc("grad " + wir + " --wrt w,h0,xs -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = weftc("check " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = weftc("dump " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("reverse=true"), std::string::npos) << "the gradient loop runs backwards\n" << r.out;
  EXPECT_NE(r.out.find("^grad_cell("), std::string::npos) << r.out;
}

// `weftc grad` then `weftc run` on the gradient fixtures, which torch.autograd made.
TEST(Weftc, GradMatchesTheGradientFixtures) {
  for (const char* name : {"mlp_cross_entropy", "conv_max_pool_mse", "layer_norm_gelu_softmax",
                           "broadcasting"}) {
    std::string dir = std::string("tests/fixtures/grad/") + name + "/";
    std::ifstream in(dir + "graph.wir");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    auto g = parse_graph(text, dir + "graph.wir");
    ASSERT_TRUE(g.ok()) << g.error().to_string();
    std::string wrt, inputs;
    std::vector<std::string> wrt_names;
    for (const Input& input : g->inputs()) {
      const std::string& n = g->value(input.value).name;
      inputs += " --input " + n + "=" + dir + n + ".npy";
      if (std::ifstream(dir + "grad_" + n + ".npy").good()) {
        wrt += (wrt.empty() ? "" : ",") + n;
        wrt_names.push_back(n);
      }
    }
    std::string grad = temp_dir() + "/" + name + "_grad.wir";
    Result r = weftc("grad " + dir + "graph.wir --wrt " + wrt + " -o " + grad);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::string out = temp_dir() + "/" + name + "_out";
    r = weftc("run " + grad + inputs + " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    for (size_t k = 0; k < wrt_names.size(); ++k) {
      expect_close(out + "/out_" + std::to_string(k) + ".npy", dir + "grad_" + wrt_names[k] + ".npy",
                   1e-9);
    }
  }
}

}  // namespace weftc_grad_test
}  // namespace
}  // namespace weft
