// Opens `weftc viz` pages and the training monitor's report in headless Chromium (Debian's `chromium` package; tools/setup
// installs it, so this test runs in CI and fails, rather than skips, without it):
// the rendered DOM, after the page's script ran, has one graph-node element per node
// of the graph, and screenshots of the viewer and of the memory picture are not blank
// (the PNG is decoded here with zlib and must hold many distinct colours).

#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/lower.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "ir/text.h"
#include "passes/pipeline.h"
#include "training/monitor/monitor.h"
#include "tests/testing/subprocess.h"
#include "tools/viz/viz.h"

namespace weft {
namespace {

using testing::CommandResult;
using testing::run_command;

const std::string kStep = "examples/fashion_mnist/mlp_train_step.wir";
const std::string kMlp = "examples/mlp/mlp.wir";

std::string tmp(const std::string& name) { return testing::test_tmpdir() + "/" + name; }

CommandResult weftc(const std::string& args) {
  static const std::string binary = std::string(std::getenv("PWD")) + "/tools/weftc/weftc";
  return run_command(binary + " " + args);
}

/// Runs headless Chromium with the flags CI uses plus `args`; stderr goes to a log file
/// (Chromium is chatty there about D-Bus even when all is well).
CommandResult chromium(const std::string& args) {
  const std::string profile = tmp("chromium-profile");
  return run_command("HOME=" + testing::test_tmpdir() + " timeout 90 chromium --headless "
                     "--no-sandbox --disable-gpu --disable-background-networking "
                     "--no-first-run --disable-dev-shm-usage --hide-scrollbars "
                     "--user-data-dir=" + profile + " " + args + " 2>>" + tmp("chromium.log"));
}

class ChromiumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CommandResult which = run_command("command -v chromium");
    ASSERT_EQ(which.exit_code, 0)
        << "headless Chromium is needed to render the viewer: install Debian's `chromium` "
           "package (tools/setup does: apt-get install -y --no-install-recommends chromium)";
  }
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

int nodes_after(const std::string& file, bool cpu) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  StatusOr<Graph> g = parse_graph(text.str(), file);
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  Pipeline pipeline = cpu ? codegen::cpu_pipeline() : default_pipeline();
  StatusOr<bool> ran = pipeline.run(*g);
  EXPECT_TRUE(ran.ok()) << ran.error().to_string();
  return static_cast<int>(g->nodes().size());
}

// ---- A small PNG decoder: 8-bit RGB or RGBA, not interlaced (what Chromium writes) ----

struct Image {
  int width = 0, height = 0;
  std::vector<uint32_t> pixels;  // 0xRRGGBB
};

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) |
         (uint32_t(uint8_t(s[at + 2])) << 8) | uint32_t(uint8_t(s[at + 3]));
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/// Decodes `path`; on failure returns an empty image and says why in `why`.
Image decode_png(const std::string& path, std::string& why) {
  std::ifstream in(path, std::ios::binary);
  std::string png((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Image img;
  if (png.size() < 8 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    why = "not a PNG file (" + std::to_string(png.size()) + " bytes)";
    return {};
  }
  int depth = 0, color = 0, interlace = 0;
  std::string idat;
  for (size_t at = 8; at + 8 <= png.size();) {
    const uint32_t length = be32(png, at);
    const std::string type = png.substr(at + 4, 4);
    if (at + 12 + length > png.size()) break;
    if (type == "IHDR") {
      img.width = static_cast<int>(be32(png, at + 8));
      img.height = static_cast<int>(be32(png, at + 12));
      depth = uint8_t(png[at + 16]);
      color = uint8_t(png[at + 17]);
      interlace = uint8_t(png[at + 20]);
    } else if (type == "IDAT") {
      idat += png.substr(at + 8, length);
    }
    at += 12 + length;
  }
  if (depth != 8 || (color != 2 && color != 6) || interlace != 0) {
    why = "unsupported PNG: depth " + std::to_string(depth) + ", colour type " +
          std::to_string(color) + ", interlace " + std::to_string(interlace);
    return {};
  }
  const int channels = color == 6 ? 4 : 3;
  const size_t stride = static_cast<size_t>(img.width) * channels;
  std::vector<uint8_t> raw((stride + 1) * img.height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()),
                 idat.size()) != Z_OK ||
      raw_size != raw.size()) {
    why = "corrupt image data";
    return {};
  }
  std::vector<uint8_t> prev(stride, 0), row(stride);
  img.pixels.reserve(static_cast<size_t>(img.width) * img.height);
  for (int y = 0; y < img.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* line = &raw[y * (stride + 1) + 1];
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= size_t(channels) ? row[i - channels] : 0, b = prev[i];
      const int c = i >= size_t(channels) ? prev[i - channels] : 0;
      const int predictor = filter == 0 ? 0
                            : filter == 1 ? a
                            : filter == 2 ? b
                            : filter == 3 ? (a + b) / 2
                                          : paeth(a, b, c);
      row[i] = static_cast<uint8_t>(line[i] + predictor);
    }
    for (int x = 0; x < img.width; ++x) {
      const uint8_t* p = &row[x * channels];
      img.pixels.push_back((uint32_t(p[0]) << 16) | (uint32_t(p[1]) << 8) | p[2]);
    }
    prev = row;
  }
  return img;
}

/// Takes a screenshot of `url` and checks it is a real picture: the right size, many
/// distinct colours, and no one colour covering (nearly) all of it.
void expect_not_blank(const std::string& url, const std::string& png, int width, int height) {
  CommandResult shot = chromium("--screenshot=" + png + " --window-size=" + std::to_string(width) +
                                "," + std::to_string(height) + " " + url);
  ASSERT_EQ(shot.exit_code, 0) << "chromium --screenshot failed: " << shot.out
                               << "\n(see " << tmp("chromium.log") << ")";
  std::string why;
  Image img = decode_png(png, why);
  ASSERT_FALSE(img.pixels.empty()) << png << ": " << why;
  EXPECT_EQ(img.width, width);
  EXPECT_EQ(img.height, height);
  std::map<uint32_t, int64_t> histogram;
  for (uint32_t p : img.pixels) ++histogram[p];
  int64_t most = 0;
  for (const auto& [colour, n] : histogram) most = std::max(most, n);
  EXPECT_GE(histogram.size(), 16u) << png << " has only " << histogram.size() << " colours";
  EXPECT_LT(most, static_cast<int64_t>(img.pixels.size()) * 95 / 100)
      << png << " is one colour almost everywhere";
}

TEST_F(ChromiumTest, TheViewerRendersEveryNodeOfATrainingStep) {
  const std::string html = tmp("step.html");
  CommandResult viz = weftc("viz " + kStep + " -o " + html);
  ASSERT_EQ(viz.exit_code, 0) << viz.out;

  CommandResult dom = chromium("--dump-dom file://" + html);
  ASSERT_EQ(dom.exit_code, 0) << "chromium --dump-dom failed (see " << tmp("chromium.log") << ")";
  // The page's script ran to its end, and every node of the graph is one element.
  EXPECT_NE(dom.out.find("data-ready=\"1\""), std::string::npos)
      << "the viewer's script did not finish; the browser's log is " << tmp("chromium.log");
  const int nodes = nodes_after(kStep, /*cpu=*/true);
  EXPECT_EQ(static_cast<int>(count(dom.out, "data-node=\"")), nodes);
  EXPECT_EQ(static_cast<int>(count(dom.out, "class=\"node ")), nodes);
  EXPECT_EQ(count(dom.out, "class=\"input\""), 9u);
  // The script sized the drawing to the window (fit), so the DOM differs from the file.
  EXPECT_NE(dom.out.find("class=\"memory-plan\""), std::string::npos);

  expect_not_blank("file://" + html, tmp("step.png"), 1280, 800);
}

// README: `model.html#n12` opens the page on node 12 — selected, alone.
TEST_F(ChromiumTest, AHashOpensThePageOnThatNode) {
  const std::string html = tmp("hash.html");
  CommandResult viz = weftc("viz " + kStep + " -o " + html);
  ASSERT_EQ(viz.exit_code, 0) << viz.out;
  CommandResult dom = chromium("--dump-dom 'file://" + html + "#n12'");
  ASSERT_EQ(dom.exit_code, 0) << "chromium --dump-dom failed (see " << tmp("chromium.log") << ")";
  EXPECT_NE(dom.out.find("data-ready=\"1\""), std::string::npos);
  const size_t at = dom.out.find("id=\"n12\"");
  ASSERT_NE(at, std::string::npos);
  const size_t open = dom.out.rfind('<', at), close = dom.out.find('>', at);
  const std::string tag = dom.out.substr(open, close - open);
  EXPECT_NE(tag.find("selected"), std::string::npos) << tag;
  EXPECT_EQ(count(dom.out, "selected\""), 1u) << "one node selected";
}

// `weftc viz --help`: `OUT.html#memory` opens the page on the memory plan's tab.
TEST_F(ChromiumTest, TheMemoryHashOpensTheMemoryTab) {
  const std::string html = tmp("memory_hash.html");
  CommandResult viz = weftc("viz " + kStep + " -o " + html);
  ASSERT_EQ(viz.exit_code, 0) << viz.out;
  for (const bool memory : {false, true}) {
    CommandResult dom = chromium("--dump-dom 'file://" + html + (memory ? "#memory'" : "'"));
    ASSERT_EQ(dom.exit_code, 0) << "chromium --dump-dom failed (see " << tmp("chromium.log") << ")";
    EXPECT_NE(dom.out.find("data-ready=\"1\""), std::string::npos);
    // The element's opening tag around the first `attribute`.
    const auto tag_of = [&](const std::string& attribute) {
      const size_t at = dom.out.find(attribute);
      if (at == std::string::npos) return std::string();
      const size_t open = dom.out.rfind('<', at);
      return dom.out.substr(open, dom.out.find('>', at) - open);
    };
    const std::string tab = tag_of("class=\"tab active\"");
    EXPECT_NE(tab.find(memory ? "data-tab=\"memory\"" : "data-tab=\"graph\""), std::string::npos) << tab;
    const std::string other = tag_of(memory ? "id=\"graph-view\"" : "id=\"memory-view\"");
    EXPECT_NE(other.find("hidden"), std::string::npos) << "the other view shows: " << other;
  }
}

TEST_F(ChromiumTest, TheReferenceBackendsViewerRendersEveryNode) {
  const std::string html = tmp("mlp.html");
  CommandResult viz = weftc("viz " + kMlp + " --backend=reference -o " + html);
  ASSERT_EQ(viz.exit_code, 0) << viz.out;
  CommandResult dom = chromium("--dump-dom file://" + html);
  ASSERT_EQ(dom.exit_code, 0) << "chromium --dump-dom failed (see " << tmp("chromium.log") << ")";
  EXPECT_NE(dom.out.find("data-ready=\"1\""), std::string::npos);
  EXPECT_EQ(static_cast<int>(count(dom.out, "data-node=\"")), nodes_after(kMlp, /*cpu=*/false));
}

// The page's interactions, driven by a script appended to it: collapsing the clusters
// hides exactly the nodes inside them, and clicking a node shows its details.
TEST_F(ChromiumTest, ClustersCollapseAndNodesShowTheirDetails) {
  StatusOr<FlowPtr> encoder = FlowBuilder::from(Linear(16, 32))
                                  .through(GELU())
                                  .through(Linear(32, 32))
                                  .label("encoder")
                                  .build();
  ASSERT_TRUE(encoder.ok()) << encoder.error().to_string();
  StatusOr<Model> model =
      FlowBuilder::from(*encoder).through(Linear(32, 10)).build({{"x", f32({8, 16})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  const Graph& g = model->graph();
  int inside = 0;
  for (const Node& n : g.nodes()) inside += n.loc.path.rfind("encoder > ", 0) == 0;
  ASSERT_GT(inside, 0);
  ASSERT_LT(inside, static_cast<int>(g.nodes().size()));

  StatusOr<std::string> page = viz::graph_to_html(g);
  ASSERT_TRUE(page.ok()) << page.error().to_string();
  const std::string driver =
      "<script>\n"
      "document.getElementById('collapse-all').click();\n"
      "document.body.dataset.folded = document.querySelectorAll('#graph g.node.folded').length;\n"
      "document.querySelector('#graph g[data-node=\"1\"]').dispatchEvent(new MouseEvent('click'));\n"
      "document.body.dataset.shown = document.querySelector('#details h2').textContent;\n"
      "document.getElementById('expand-all').click();\n"
      "document.body.dataset.unfolded = document.querySelectorAll('#graph g.node.folded').length;\n"
      "</script>\n";
  std::string html = *page;
  html.insert(html.rfind("</body>"), driver);
  const std::string path = tmp("clusters.html");
  std::ofstream(path) << html;

  CommandResult dom = chromium("--dump-dom file://" + path);
  ASSERT_EQ(dom.exit_code, 0) << "chromium --dump-dom failed (see " << tmp("chromium.log") << ")";
  EXPECT_NE(dom.out.find("data-ready=\"1\""), std::string::npos);
  EXPECT_NE(dom.out.find("data-folded=\"" + std::to_string(inside) + "\""), std::string::npos)
      << inside << " nodes are inside the cluster";
  EXPECT_NE(dom.out.find("data-shown=\"" + std::string(op_name(g.node(1).op)) + "\""),
            std::string::npos);
  EXPECT_NE(dom.out.find("data-unfolded=\"0\""), std::string::npos);
}

TEST_F(ChromiumTest, TheMemoryPictureIsNotBlank) {
  const std::string svg = tmp("step_memory.svg");
  CommandResult viz = weftc("viz " + kStep + " --memory -o " + svg);
  ASSERT_EQ(viz.exit_code, 0) << viz.out;
  expect_not_blank("file://" + svg, tmp("step_memory.png"), 960, 420);
}

// The training monitor's HTML report (training/monitor): every chart renders, and a
// screenshot is a real picture.
TEST_F(ChromiumTest, TheTrainingReportRenders) {
  monitor::RunLog log({"test_accuracy", "test_loss"});
  for (int64_t t = 1; t <= 120; ++t) {
    std::map<std::string, double> metrics;
    if (t % 40 == 0) metrics = {{"test_accuracy", 0.7 + 0.001 * t}, {"test_loss", 1.0 / t}};
    log.record({.step = t, .epoch = (t - 1) / 40 + 1, .loss = 2.0 / std::sqrt(t) + 0.05 * (t % 7),
                .lr = 1e-3, .examples_per_s = 9000.0 + static_cast<double>(t), .elapsed_s = 0.1 * t},
               metrics);
    if (t % 40 == 0) log.end_epoch(t / 40, 4.0 + 0.1 * t / 40);
  }
  const std::string html = tmp("report.html");
  ASSERT_TRUE(log.write_report(html, "chromium test run").ok());
  CommandResult dom = chromium("--dump-dom file://" + html);
  ASSERT_EQ(dom.exit_code, 0) << "chromium --dump-dom failed (see " << tmp("chromium.log") << ")";
  // loss, two metrics, time per epoch, memory, learning rate.
  EXPECT_EQ(count(dom.out, "<svg class=\"chart\""), 6u);
  EXPECT_EQ(count(dom.out, "class=\"bar\""), 3u);
  EXPECT_NE(dom.out.find("<title>chromium test run</title>"), std::string::npos);
  expect_not_blank("file://" + html, tmp("report.png"), 1200, 900);
}

}  // namespace
}  // namespace weft
