// gradient_graph against PyTorch: each directory tests/fixtures/grad/NAME (made with
// torch.autograd by tests/fixtures/make_grad_fixtures.py) holds graph.wir, one
// <input>.npy per graph input and grad_<input>.npy for every float input. The gradient
// graph of output 0 w.r.t. those inputs, run through the reference interpreter, must
// match to 1e-9 (|got - want| <= 1e-9 (1 + |want|)).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "autodiff/grad.h"
#include "ir/text.h"
#include "passes/pipeline.h"
#include "formats/npy.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {

// Bazel runs the test in its runfiles root, where the fixtures keep their tree paths.
constexpr char kDir[] = "tests/fixtures/grad/";
const std::vector<std::string> kFixtures = {"mlp_cross_entropy", "conv_max_pool_mse",
                                            "layer_norm_gelu_softmax", "broadcasting"};

class GradFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(GradFixture, MatchesTorchAutograd) {
  const std::string dir = kDir + GetParam() + "/";
  std::ifstream file(dir + "graph.wir");
  ASSERT_TRUE(file.good()) << "cannot open " << dir << "graph.wir";
  std::stringstream text;
  text << file.rdbuf();
  auto parsed = parse_graph(text.str(), dir + "graph.wir");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  Graph g = std::move(parsed).value();
  auto typed = default_pipeline().run_until(g, "infer-types");
  ASSERT_TRUE(typed.ok()) << typed.error().to_string();

  std::vector<Tensor> inputs;
  std::vector<std::string> wrt;
  std::vector<Tensor> want;
  for (const Input& in : g.inputs()) {
    const std::string& name = g.value(in.value).name;
    auto t = read_npy(dir + name + ".npy");
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    inputs.push_back(std::move(t).value());
    if (!is_floating(g.type(in.value).dtype)) continue;
    auto grad = read_npy(dir + "grad_" + name + ".npy");
    ASSERT_TRUE(grad.ok()) << grad.error().to_string();
    wrt.push_back(name);
    want.push_back(std::move(grad).value());
  }
  ASSERT_FALSE(wrt.empty());

  auto grad = gradient_graph(g, /*output=*/0, wrt);
  ASSERT_TRUE(grad.ok()) << grad.error().to_string();
  ASSERT_TRUE(default_pipeline().run_until(*grad, "infer-types").ok());
  auto got = reference::run(*grad, inputs);
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  ASSERT_EQ(got->outputs.size(), wrt.size());
  for (size_t i = 0; i < wrt.size(); ++i) {
    ASSERT_EQ(got->outputs[i].type(), want[i].type()) << "d loss / d " << wrt[i];
    const std::vector<double> a = got->outputs[i].to_doubles(), b = want[i].to_doubles();
    for (size_t j = 0; j < a.size(); ++j) {
      EXPECT_NEAR(a[j], b[j], 1e-9 * (1 + std::abs(b[j])))
          << GetParam() << ": d loss / d " << wrt[i] << "[" << j << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, GradFixture, ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(GradFixtures, EveryDirectoryIsTested) {
  std::set<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    if (entry.is_directory()) found.insert(entry.path().filename().string());
  }
  EXPECT_EQ(found, std::set<std::string>(kFixtures.begin(), kFixtures.end()));
}

}  // namespace
}  // namespace weft
