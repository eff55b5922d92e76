// End-to-end tests of the weftc binary, run as a user would (a subprocess in the
// runfiles tree), checking its exit status, what it printed and what it wrote.
// `weftc viz`: the page, the memory picture and their errors.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "tools/weftc/weftc_testing.h"

namespace weft {
namespace {
namespace weftc_viz_test {  // this file's names, apart in its package's unity test

using namespace weftc_testing;

TEST(Weftc, VizWritesAPageAndAMemoryPicture) {
  std::string wir = kExample + "mlp.wir";
  std::string html = temp_dir() + "/mlp.html";
  Result r = weftc("viz " + wir + " -o " + html);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "wrote " + html + " (@mlp, 8 nodes, arena 1.31 KiB)\n");
  std::ifstream page(html);
  std::string text((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(text.find("after schedule-memory"), std::string::npos);
  // Without -o the page goes to standard output; any pass may be the last one.
  r = weftc("viz " + wir + " --backend=reference --after=dce --title=MLP");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("<title>MLP · weft</title>"), std::string::npos);
  EXPECT_NE(r.out.find("backend reference · after dce"), std::string::npos);
  EXPECT_EQ(r.out.find("data-tab=\"memory\""), std::string::npos);
  r = weftc("viz " + wir + " --after=parse");
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 200);
  r = weftc("viz " + wir + " --memory");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"memory-plan\"", 0), 0u);
  r = weftc("viz --help");
  EXPECT_EQ(r.out.rfind("usage: weftc viz FILE.wir", 0), 0u) << r.out;
}

TEST(Weftc, VizErrors) {
  std::string wir = kExample + "mlp.wir";
  Result r = weftc("viz " + wir + " --memory --backend=reference");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc viz: --memory draws the cpu backend's memory plan; the reference "
                   "interpreter plans no memory (leave out --backend=reference)\n");
  r = weftc("viz " + wir + " --backend=tpu");
  EXPECT_EQ(r.out, "error: weftc viz: unknown backend 'tpu'; backends: cpu, reference\n");
  r = weftc("viz " + wir + " --memory --after=parse");
  EXPECT_EQ(r.out, wir + ":13:3: error: memory planning: %h has no type (run infer-types first)\n");
  r = weftc("viz");
  EXPECT_EQ(r.out, "error: weftc viz: expected one FILE argument, got 0 (see weftc viz --help)\n");
  // Without graphviz there is no layout; the error names the package.
  r = weftc("viz " + wir + " -o " + temp_dir() + "/never.html", "PATH=/nonexistent");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: cannot lay out the graph: graphviz's `dot` is not on PATH; install the "
                   "Debian package `graphviz` (tools/setup installs it)\n");
}

// --precision=bf16 draws the step after autocast: the bf16 values' edges in bf16's colour
// (the classes graphviz keeps in the SVG), the legend's dtype keys; none at f32.
TEST(Weftc, VizColoursABf16StepByDtype) {
  const std::string html = temp_dir() + "/bf16.html";
  Result r = weftc("viz " + kExample + "mlp.wir --precision=bf16 --after=autocast -o " + html);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream page(html);
  const std::string text((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  auto count = [&](const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  // bf16 values feed: the two matmuls (2 each), the two bias adds (2 each), gelu, the
  // logits' cast back: 10 edges.
  EXPECT_EQ(count("class=\"edge dtype-bf16\""), 10) << text;
  EXPECT_EQ(count("class=\"edge dtype-int\""), 2);  // %labels into one_hot, cross_entropy
  EXPECT_NE(text.find("data-dtype=\"bf16\""), std::string::npos);
  r = weftc("viz " + kExample + "mlp.wir --after=cse -o " + html);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream f32_page(html);
  const std::string f32_text((std::istreambuf_iterator<char>(f32_page)), std::istreambuf_iterator<char>());
  EXPECT_EQ(f32_text.find("class=\"edge dtype-bf16\""), std::string::npos);
  EXPECT_NE(f32_text.find("class=\"edge dtype-f32\""), std::string::npos);
}

}  // namespace weftc_viz_test
}  // namespace
}  // namespace weft
