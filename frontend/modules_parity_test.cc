// PyTorch parity of the module library: every module, run through the reference
// interpreter, matches PyTorch 1.13 on the same weights and inputs to 1e-5, in every
// mode that changes the computation. The fixtures (frontend/testdata/modules/CASE/) are
// made by frontend/testdata/make_module_fixtures.py; kCases below lists the same cases.
// Dropout in training draws from weft's Philox stream, which PyTorch does not share, so
// it is tested statistically. The last tests pin each module's user errors.

#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/module_fixtures.h"
#include "frontend/testing/run_model.h"
#include "formats/npy.h"

namespace weft {
namespace {
namespace modules_parity_test {  // this file's names, apart in its package's unity test

using testing::conv;
using testing::error_of;
using testing::load_npy;

constexpr char kDir[] = "frontend/testdata/modules/";
constexpr double kTol = 1e-5;

struct Case {
  const char* name;
  std::function<FlowBuilder()> flow;
  bool training = false;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

FlowBuilder one(ModulePtr m) { return FlowBuilder::from(std::move(m)); }

// Bilinear's second input arrives through uses(...), so the module sits at position 1.
FlowBuilder two_inputs(ModulePtr m) {
  auto b = FlowBuilder::from(Identity());
  b.input({"x2"}).through(std::move(m)).uses({"x2"});
  return b;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"conv2d_basic", [] { return one(Conv2d(3, 4, conv(3))); }},
      {"conv2d_stride2_pad1", [] { return one(Conv2d(3, 4, conv(3, 2, 1))); }},
      {"conv2d_dilation2", [] { return one(Conv2d(2, 3, conv(3, 1, 2, 2))); }},
      {"conv2d_groups2", [] { return one(Conv2d(4, 6, conv(3, 1, 1, 1, 2))); }},
      {"conv2d_depthwise_nobias", [] { return one(Conv2d(4, 4, conv(3, 2, 0, 1, 4, false))); }},
      {"conv2d_k1_stride2", [] { return one(Conv2d(3, 5, conv(1, 2))); }},
      {"conv_transpose2d_s2_p1", [] { return one(ConvTranspose2d(4, 3, conv(3, 2, 1))); }},
      {"conv_transpose2d_output_padding",
       [] { return one(ConvTranspose2d(4, 3, conv(3, 2, 1, 1, 1, true, 1))); }},
      {"conv_transpose2d_groups2",
       [] { return one(ConvTranspose2d(4, 6, conv(3, 2, 1, 1, 2, true, 1))); }},
      {"conv_transpose2d_dilation_groups",
       [] { return one(ConvTranspose2d(4, 2, conv(3, 1, 0, 2, 2))); }},
      {"conv_transpose2d_k4_nobias",
       [] { return one(ConvTranspose2d(2, 3, conv(4, 2, 1, 1, 1, false))); }},
      {"batch_norm2d_train", [] { return one(BatchNorm2d(3)); }, /*training=*/true},
      {"batch_norm2d_eval", [] { return one(BatchNorm2d(3)); }},
      {"layer_norm", [] { return one(LayerNorm(8)); }},
      {"layer_norm_2d", [] { return one(LayerNorm(std::vector<int64_t>{4, 5})); }},
      {"rms_norm", [] { return one(RMSNorm({8})); }},
      {"rms_norm_2d", [] { return one(RMSNorm({4, 5}, 1e-5)); }},
      {"group_norm", [] { return one(GroupNorm(2, 6)); }},
      {"group_norm_1d", [] { return one(GroupNorm(3, 6)); }},
      {"embedding", [] { return one(Embedding(10, 4)); }},
      {"bilinear", [] { return two_inputs(Bilinear(3, 4, 5)); }},
      {"bilinear_3d", [] { return two_inputs(Bilinear(3, 4, 2)); }},
      {"learned_parameter", [] { return one(LearnedParameter({5, 8})); }},
      {"max_pool2d", [] { return one(MaxPool2d(2)); }},
      {"max_pool2d_k3_s2_p1", [] { return one(MaxPool2d(3, 2, 1)); }},
      {"avg_pool2d", [] { return one(AvgPool2d(2)); }},
      {"avg_pool2d_k3_s2_p1", [] { return one(AvgPool2d(3, 2, 1)); }},
      {"avg_pool2d_k3_s1_p1", [] { return one(AvgPool2d(3, 1, 1)); }},
      {"adaptive_avg_pool2d_1x1", [] { return one(AdaptiveAvgPool2d(1, 1)); }},
      {"adaptive_avg_pool2d_2x3", [] { return one(AdaptiveAvgPool2d(2, 3)); }},
      {"flatten", [] { return one(Flatten()); }},
      {"flatten_1_2", [] { return one(Flatten(1, 2)); }},
      {"dropout_eval", [] { return one(Dropout(0.5)); }},
      {"identity", [] { return one(Identity()); }},
      {"relu", [] { return one(ReLU()); }},
      {"leaky_relu", [] { return one(LeakyReLU()); }},
      {"leaky_relu_0.2", [] { return one(LeakyReLU(0.2)); }},
      {"elu", [] { return one(ELU()); }},
      {"elu_0.5", [] { return one(ELU(0.5)); }},
      {"gelu", [] { return one(GELU()); }},
      {"gelu_tanh", [] { return one(GELU(/*tanh_approximation=*/true)); }},
      {"silu", [] { return one(SiLU()); }},
      {"mish", [] { return one(Mish()); }},
      {"selu", [] { return one(SELU()); }},
      {"softplus", [] { return one(Softplus()); }},
      {"softplus_beta2_threshold5", [] { return one(Softplus(2, 5)); }},
      {"hardswish", [] { return one(Hardswish()); }},
      {"hardsigmoid", [] { return one(Hardsigmoid()); }},
      {"prelu", [] { return one(PReLU()); }},
      {"prelu_channels", [] { return one(PReLU(3)); }},
      {"sigmoid", [] { return one(Sigmoid()); }},
      {"tanh", [] { return one(Tanh()); }},
      {"softmax", [] { return one(Softmax(-1)); }},
      {"softmax_axis0", [] { return one(Softmax(0)); }},
      {"log_softmax", [] { return one(LogSoftmax(-1)); }},
  };
  return kCases;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// |a - b| <= tol + tol·|b| everywhere, with the same type; describes the worst element.
::testing::AssertionResult close(const Tensor& got, const Tensor& want) {
  if (got.type() != want.type()) {
    return ::testing::AssertionFailure()
           << "got " << got.type().to_string() << ", PyTorch gives " << want.type().to_string();
  }
  std::vector<double> a = got.to_doubles(), b = want.to_doubles();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(std::abs(a[i] - b[i]) <= kTol + kTol * std::abs(b[i]))) {
      return ::testing::AssertionFailure() << "element " << i << ": weft " << a[i]
                                           << ", PyTorch " << b[i];
    }
  }
  return ::testing::AssertionSuccess();
}

class ModuleParity : public ::testing::TestWithParam<Case> {};

TEST_P(ModuleParity, MatchesPyTorch) {
  const Case& c = GetParam();
  const std::string dir = kDir + std::string(c.name);
  std::vector<Tensor> data = {load_npy(dir + "/input.npy")};
  std::vector<InputSpec> specs = {{"x", data[0].type()}};
  if (std::filesystem::exists(dir + "/input_x2.npy")) {
    data.push_back(load_npy(dir + "/input_x2.npy"));
    specs.push_back({"x2", data[1].type()});
  }
  StatusOr<Model> model = c.flow().build(specs, BuildOptions{.training = c.training});
  ASSERT_TRUE(model.ok()) << model.error().to_string();

  // PyTorch's state dict and weft's parameter table hold the same names.
  std::set<std::string> fixture_params, fixture_updates, weft_params;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string f = entry.path().filename().string();
    if (f == "input.npy" || f == "input_x2.npy" || f == "output.npy") continue;
    if (ends_with(f, ".out.npy")) {
      fixture_updates.insert(f.substr(0, f.size() - 8));
    } else {
      fixture_params.insert(f.substr(0, f.size() - 4));
    }
  }
  for (const ParamInfo& p : model->parameters()) weft_params.insert(p.name);
  EXPECT_EQ(weft_params, fixture_params);

  StatusOr<std::map<std::string, Tensor>> params = testing::load_params(*model, dir);
  ASSERT_TRUE(params.ok()) << params.error().to_string();
  StatusOr<testing::ModelRun> run = testing::run_model(*model, data, *params);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  ASSERT_EQ(run->outputs.size(), 1u);
  EXPECT_TRUE(close(run->outputs[0], load_npy(dir + "/output.npy")));

  // The updated state (BatchNorm2d's running statistics and batch count) matches too.
  std::set<std::string> updated;
  for (const auto& [name, t] : run->updated) updated.insert(name);
  EXPECT_EQ(updated, fixture_updates);
  for (const std::string& name : fixture_updates) {
    auto it = run->updated.find(name);
    if (it == run->updated.end()) continue;
    EXPECT_TRUE(close(it->second, load_npy(dir + "/" + name + ".out.npy"))) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModuleParity, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.name;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(ModuleParityFixtures, EveryFixtureHasACase) {
  std::set<std::string> listed;
  for (const Case& c : cases()) listed.insert(c.name);
  EXPECT_EQ(testing::fixture_dirs(kDir), listed);
}

// ---- Dropout in training: weft's Philox stream is not PyTorch's, so statistics.

std::vector<float> run_dropout(const FlowBuilder& flow, const Tensor& x,
                               std::map<std::string, Tensor>* state) {
  StatusOr<Model> model = flow.build({{"x", x.type()}});
  EXPECT_TRUE(model.ok()) << model.error().to_string();
  if (!model.ok()) return {};
  if (state->empty()) (*state)["rng"] = Tensor::from_vector<int64_t>({2}, {7, 0});
  StatusOr<testing::ModelRun> run = testing::run_model(*model, {x}, *state);
  EXPECT_TRUE(run.ok()) << run.error().to_string();
  if (!run.ok()) return {};
  EXPECT_EQ(run->updated.count("rng"), 1u);
  *state = run->updated;  // Feed the advanced rng into the next step.
  const Tensor& y = run->outputs[0];
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

TEST(DropoutTraining, KeepsOneMinusPAndScalesExactly) {
  const int64_t n = 200000;
  const double p = 0.3;
  std::vector<float> xs(n);
  for (int64_t i = 0; i < n; ++i) xs[i] = 0.5f + static_cast<float>(i % 97) * 0.01f;
  Tensor x = Tensor::from_vector<float>({n}, xs);
  std::map<std::string, Tensor> state;
  std::vector<float> y = run_dropout(FlowBuilder::from(Dropout(p)), x, &state);
  ASSERT_EQ(static_cast<int64_t>(y.size()), n);
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (y[i] == 0) continue;
    ++kept;
    ASSERT_EQ(y[i], xs[i] * scale) << "element " << i;
  }
  const double rate = static_cast<double>(kept) / n;
  const double standard_error = std::sqrt(p * (1 - p) / n);
  EXPECT_NEAR(rate, 1 - p, 5 * standard_error);
}

// The fraction of positions where two masks of keep probability q differ is 2q(1-q) for
// independent masks; identical masks give 0.
void expect_independent(const std::vector<float>& a, const std::vector<float>& b, double q) {
  ASSERT_EQ(a.size(), b.size());
  int64_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += (a[i] == 0) != (b[i] == 0);
  const double n = static_cast<double>(a.size());
  const double expected = 2 * q * (1 - q);
  EXPECT_NEAR(differ / n, expected, 5 * std::sqrt(expected * (1 - expected) / n));
}

TEST(DropoutTraining, TwoModulesInOneGraphDrawDifferentMasks) {
  const int64_t n = 50000;
  Tensor x = Tensor::from_vector<float>({n}, std::vector<float>(n, 1.0f));
  std::map<std::string, Tensor> state;
  std::vector<float> y = run_dropout(
      FlowBuilder::from(Identity()).split({Dropout(0.5), Dropout(0.5)}).merge(Merge::concat(0)),
      x, &state);
  ASSERT_EQ(static_cast<int64_t>(y.size()), 2 * n);
  expect_independent(std::vector<float>(y.begin(), y.begin() + n),
                     std::vector<float>(y.begin() + n, y.end()), 0.5);
}

TEST(DropoutTraining, EachStepDrawsANewMask) {
  const int64_t n = 50000;
  Tensor x = Tensor::from_vector<float>({n}, std::vector<float>(n, 1.0f));
  std::map<std::string, Tensor> state;
  auto flow = FlowBuilder::from(Dropout(0.25));
  std::vector<float> first = run_dropout(flow, x, &state);
  Tensor rng_after_first = state.at("rng");
  std::vector<float> second = run_dropout(flow, x, &state);
  EXPECT_FALSE(rng_after_first == state.at("rng"));
  expect_independent(first, second, 0.75);
  // The same rng state gives the same mask: the graph is a pure function of its inputs.
  std::map<std::string, Tensor> replay = {{"rng", rng_after_first}};
  EXPECT_EQ(run_dropout(flow, x, &replay), second);
}

TEST(DropoutTraining, ZeroProbabilityAndEvalAreTheIdentity) {
  for (auto [p, training] : {std::pair{0.0, true}, std::pair{0.5, false}}) {
    auto model = FlowBuilder::from(Dropout(p)).build({{"x", f32({4})}}, {.training = training});
    ASSERT_TRUE(model.ok()) << model.error().to_string();
    EXPECT_TRUE(model->graph().nodes().empty()) << p;
    EXPECT_TRUE(model->parameters().empty()) << p;  // No rng state drawn.
  }
}

// ---- Parameter tables: PyTorch's names, kinds and default initializers.

TEST(ModuleParameters, NamesKindsAndInitializers) {
  auto model = FlowBuilder::from(Conv2d(4, 8, conv(3, 1, 1, 1, 2)))
                   .through(BatchNorm2d(8))
                   .through(ConvTranspose2d(8, 6, conv(4, 2, 1, 1, 2)))
                   .through(PReLU(6))
                   .through(GroupNorm(3, 6))
                   .through(Flatten())
                   .through(LearnedParameter({6 * 10 * 10}))
                   .build({{"x", f32({2, 4, 5, 5})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  std::vector<std::string> names;
  for (const ParamInfo& p : model->parameters()) {
    names.push_back(p.name + " " + model->graph().type(p.value).to_string() + " " +
                    (p.kind == InputKind::param ? "param " : "state ") + p.init.to_string());
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "0.weight f32[8,2,3,3] param " + Initializer::kaiming_uniform(std::sqrt(5.0)).to_string(),
                       "0.bias f32[8] param " + Initializer::uniform(-1 / std::sqrt(18.0), 1 / std::sqrt(18.0)).to_string(),
                       "1.weight f32[8] param constant(1.0)",
                       "1.bias f32[8] param constant(0.0)",
                       "1.running_mean f32[8] state constant(0.0)",
                       "1.running_var f32[8] state constant(1.0)",
                       "1.num_batches_tracked i64[] state constant(0.0)",
                       "2.weight f32[8,3,4,4] param " + Initializer::kaiming_uniform(std::sqrt(5.0)).to_string(),
                       "2.bias f32[6] param " + Initializer::uniform(-1 / std::sqrt(48.0), 1 / std::sqrt(48.0)).to_string(),
                       "3.weight f32[6] param constant(0.25)",
                       "4.weight f32[6] param constant(1.0)",
                       "4.bias f32[6] param constant(0.0)",
                       "6.weight f32[600] param " + Initializer::normal(0, 1).to_string(),
                   }));
}

TEST(ModuleParameters, Descriptions) {
  EXPECT_EQ(Conv2d(3, 64, conv(3, 2, 1))->describe(), "Conv2d(3->64, k3, s2, p1)");
  EXPECT_EQ(Conv2d(4, 8, conv(3, 1, 2, 2, 4, false))->describe(),
            "Conv2d(4->8, k3, s1, p2, d2, g4, no bias)");
  EXPECT_EQ(ConvTranspose2d(8, 4, conv(3, 2, 1, 1, 1, true, 1))->describe(),
            "ConvTranspose2d(8->4, k3, s2, p1, op1)");
  EXPECT_EQ(BatchNorm2d(16)->describe(), "BatchNorm2d(16)");
  EXPECT_EQ(RMSNorm({4, 8})->describe(), "RMSNorm(4,8)");
  EXPECT_EQ(GroupNorm(2, 8)->describe(), "GroupNorm(2, 8)");
  EXPECT_EQ(Embedding(100, 16)->describe(), "Embedding(100, 16)");
  EXPECT_EQ(Bilinear(3, 4, 5)->describe(), "Bilinear(3x4->5)");
  EXPECT_EQ(LearnedParameter({5, 8})->describe(), "LearnedParameter([5,8])");
  EXPECT_EQ(Dropout(0.1)->describe(), "Dropout(0.1)");
  EXPECT_EQ(MaxPool2d(2)->describe(), "MaxPool2d(k2, s2, p0)");
  EXPECT_EQ(AvgPool2d(3, 1, 1)->describe(), "AvgPool2d(k3, s1, p1)");
  EXPECT_EQ(AdaptiveAvgPool2d(1, 1)->describe(), "AdaptiveAvgPool2d(1x1)");
  EXPECT_EQ(Flatten()->describe(), "Flatten(1, -1)");
  EXPECT_EQ(LeakyReLU()->describe(), "LeakyReLU(0.01)");
  EXPECT_EQ(ELU()->describe(), "ELU(1.0)");
  EXPECT_EQ(Softplus()->describe(), "Softplus(beta=1.0, threshold=20.0)");
  EXPECT_EQ(PReLU(3)->describe(), "PReLU(3)");
}

// ---- User errors: each names the module, what it expected, what it got, and the
// ---- builder call (file:line:column) and path.

const std::string kFile = "frontend/modules_parity_test.cc";

std::string at(int line) { return kFile + ":" + std::to_string(line) + ":"; }

TEST(ModuleErrors, Convolutions) {
  int line = __LINE__ + 1;
  std::string e1 = error_of(Conv2d(3, 8), {{"x", f32({2, 4, 8, 8})}});
  EXPECT_EQ(e1, at(line) + "28: error: Conv2d(3->8, k3, s1, p0) expects an NCHW input [N,3,H,W], "
                "got f32[2,4,8,8] [in Conv2d(3->8, k3, s1, p0)]");
  line = __LINE__ + 1;
  std::string e2 = error_of(Conv2d(3, 8, conv(5)), {{"x", f32({1, 3, 4, 4})}});
  EXPECT_EQ(e2, at(line) + "28: error: Conv2d(3->8, k5, s1, p0): the input f32[1,3,4,4] is too "
                "small for a kernel of extent 5 (output would be 0x0) [in Conv2d(3->8, k5, s1, p0)]");
  line = __LINE__ + 1;
  std::string e3 = error_of(Conv2d(4, 6, conv(3, 1, 0, 1, 4)), {{"x", f32({1, 4, 4, 4})}});
  EXPECT_EQ(e3, at(line) + "28: error: Conv2d(4->6, k3, s1, p0, g4): groups=4 must divide both 4 "
                "input and 6 output channels [in Conv2d(4->6, k3, s1, p0, g4)]");
  line = __LINE__ + 1;
  std::string e4 = error_of(ConvTranspose2d(4, 2, conv(3, 2, 1)), {{"x", f32({1, 2, 4, 4})}});
  EXPECT_EQ(e4, at(line) + "28: error: ConvTranspose2d(4->2, k3, s2, p1) expects an NCHW input "
                "[N,4,H,W], got f32[1,2,4,4] [in ConvTranspose2d(4->2, k3, s2, p1)]");
  line = __LINE__ + 1;
  std::string e5 = error_of(ConvTranspose2d(4, 2, conv(3, 2, 1, 1, 1, true, 2)), {{"x", f32({1, 4, 4, 4})}});
  EXPECT_EQ(e5, at(line) + "28: error: ConvTranspose2d(4->2, k3, s2, p1, op2): output_padding=2 "
                "must be smaller than stride=2 [in ConvTranspose2d(4->2, k3, s2, p1, op2)]");
}

TEST(ModuleErrors, Normalization) {
  int line = __LINE__ + 1;
  std::string e1 = error_of(BatchNorm2d(16), {{"x", f32({2, 8, 4, 4})}});
  EXPECT_EQ(e1, at(line) + "28: error: BatchNorm2d(16) expects an NCHW input [N,16,H,W], got "
                "f32[2,8,4,4] [in BatchNorm2d(16)]");
  line = __LINE__ + 1;
  std::string e2 = error_of(BatchNorm2d(3), {{"x", f32({1, 3, 1, 1})}});
  EXPECT_EQ(e2, at(line) + "28: error: BatchNorm2d(3) in training needs more than one value per "
                "channel to compute the batch variance, got f32[1,3,1,1] [in BatchNorm2d(3)]");
  EXPECT_EQ(error_of(BatchNorm2d(3), {{"x", f32({1, 3, 1, 1})}}, /*training=*/false), "(no error)");
  line = __LINE__ + 1;
  std::string e3 = error_of(RMSNorm({8}), {{"x", f32({2, 6})}});
  EXPECT_EQ(e3, at(line) + "28: error: RMSNorm(8) normalizes trailing dims [8] but the input is "
                "f32[2,6] [in RMSNorm(8)]");
  line = __LINE__ + 1;
  std::string e4 = error_of(GroupNorm(2, 6), {{"x", f32({2, 4, 3})}});
  EXPECT_EQ(e4, at(line) + "28: error: GroupNorm(2, 6) expects an input [N,6,...], got f32[2,4,3] "
                "[in GroupNorm(2, 6)]");
  line = __LINE__ + 1;
  std::string e5 = error_of(GroupNorm(4, 6), {{"x", f32({2, 6, 3})}});
  EXPECT_EQ(e5, at(line) + "28: error: GroupNorm(4, 6): groups=4 must divide the 6 channels "
                "[in GroupNorm(4, 6)]");
  line = __LINE__ + 1;
  std::string e6 = error_of(LayerNorm(8), {{"x", f32({2, 6})}});
  EXPECT_EQ(e6, at(line) + "28: error: LayerNorm(8) normalizes trailing dims [8] but the input is "
                "f32[2,6] [in LayerNorm(8)]");
}

TEST(ModuleErrors, EmbeddingDropoutPoolingFlatten) {
  int line = __LINE__ + 1;
  std::string e1 = error_of(Embedding(10, 4), {{"x", f32({2, 3})}});
  EXPECT_EQ(e1, at(line) + "28: error: Embedding(10, 4) expects integer indices (i64 or i32), got "
                "f32[2,3] [in Embedding(10, 4)]");
  line = __LINE__ + 1;
  std::string e2 = error_of(Dropout(1.0), {{"x", f32({2, 3})}});
  EXPECT_EQ(e2, at(line) + "28: error: Dropout(1.0): the drop probability p must be in [0, 1), "
                "got 1.0 [in Dropout(1.0)]");
  line = __LINE__ + 1;
  std::string e3 = error_of(MaxPool2d(2), {{"x", f32({3, 8, 8})}});
  EXPECT_EQ(e3, at(line) + "28: error: MaxPool2d(k2, s2, p0) expects an NCHW input [N,C,H,W], got "
                "f32[3,8,8] [in MaxPool2d(k2, s2, p0)]");
  line = __LINE__ + 1;
  std::string e4 = error_of(AvgPool2d(2, 2, 2), {{"x", f32({1, 3, 8, 8})}});
  EXPECT_EQ(e4, at(line) + "28: error: AvgPool2d(k2, s2, p2): kernel and stride must be >= 1 and "
                "padding in [0, kernel/2] [in AvgPool2d(k2, s2, p2)]");
  line = __LINE__ + 1;
  std::string e5 = error_of(MaxPool2d(5), {{"x", f32({1, 3, 4, 4})}});
  EXPECT_EQ(e5, at(line) + "28: error: MaxPool2d(k5, s5, p0): the window is larger than the padded "
                "input f32[1,3,4,4] [in MaxPool2d(k5, s5, p0)]");
  line = __LINE__ + 1;
  std::string e6 = error_of(AdaptiveAvgPool2d(2, 2), {{"x", f32({1, 3, 5, 4})}});
  EXPECT_EQ(e6, at(line) + "28: error: AdaptiveAvgPool2d(2x2) needs the input's spatial size to be "
                "a multiple of the output's 2x2, got f32[1,3,5,4] (5x4); uneven windows are not "
                "supported [in AdaptiveAvgPool2d(2x2)]");
  line = __LINE__ + 1;
  std::string e7 = error_of(Flatten(2, 1), {{"x", f32({2, 3, 4})}});
  EXPECT_EQ(e7, at(line) + "28: error: Flatten(2, 1): dims 2..1 are not an ordered range of the "
                "input f32[2,3,4] [in Flatten(2, 1)]");
}

// nn.Linear takes a vector [in] and gives [out]; weft's Linear let it through its own
// check and then failed in matmul ("operands need rank >= 2 ... [in Linear(3->2)]").
TEST(ModuleShapes, LinearTakesAVector) {
  auto vector = FlowBuilder::from(Linear(3, 2)).build({{"x", f32({3})}});
  ASSERT_TRUE(vector.ok()) << vector.error().to_string();
  const std::map<std::string, Tensor> params = {
      {"0.weight", Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
      {"0.bias", Tensor::from_vector<float>({2}, {0.5f, -1})}};
  auto run = testing::run_model(*vector, {Tensor::from_vector<float>({3}, {1, 0, -2})}, params);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  ASSERT_EQ(run->outputs[0].type(), f32({2}));
  EXPECT_EQ(run->outputs[0].data<float>()[0], 1 - 6 + 0.5f);
  EXPECT_EQ(run->outputs[0].data<float>()[1], 4 - 12 - 1.0f);
}

// BatchNorm1d(0) on [N, 0] is empty, as in PyTorch; it divided the element count by the
// channels (SIGFPE while building).
TEST(ModuleShapes, BatchNormOfNoChannels) {
  for (bool training : {false, true}) {
    auto empty = FlowBuilder::from(BatchNorm1d(0)).build({{"x", f32({2, 0})}}, {.training = training});
    ASSERT_TRUE(empty.ok()) << empty.error().to_string();
    EXPECT_EQ(empty->graph().type(empty->graph().outputs()[0]), f32({2, 0}));
  }
}

TEST(ModuleErrors, LinearAndActivations) {
  int line = __LINE__ + 1;
  std::string e1 = error_of(LearnedParameter({5, 8}), {{"x", f32({2, 4, 8})}});
  EXPECT_EQ(e1, at(line) + "28: error: LearnedParameter([5,8]) is added to the stream and must "
                "broadcast to its shape, but the input is f32[2,4,8] [in LearnedParameter([5,8])]");
  line = __LINE__ + 1;
  std::string e2 = error_of(PReLU(3), {{"x", f32({2, 4, 5})}});
  EXPECT_EQ(e2, at(line) + "28: error: PReLU(3) has one slope per channel and expects an input "
                "[N,3,...], got f32[2,4,5] [in PReLU(3)]");
  line = __LINE__ + 1;
  std::string e3 = error_of(Bilinear(3, 4, 5), {{"x", f32({6, 3})}});
  EXPECT_EQ(e3, at(line) + "28: error: Bilinear(3x4->5) takes two inputs, the stream and one value "
                "from uses(...), but 1 were given [in Bilinear(3x4->5)]");

  line = __LINE__ + 2;
  auto model = FlowBuilder::from(Identity()).input({"x2"})
                   .through(Bilinear(3, 4, 5)).uses({"x2"})
                   .build({{"x", f32({6, 3})}, {"x2", f32({5, 4})}});
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.error().to_string(),
            at(line) + "28: error: Bilinear(3x4->5) expects inputs [..., 3] and [..., 4] with the "
                       "same leading dims and dtype, got f32[6,3] and f32[5,4] [in Bilinear(3x4->5)]");
}

}  // namespace modules_parity_test
}  // namespace
}  // namespace weft
