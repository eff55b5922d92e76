// PyTorch 1.13 parity, with gradients, of the modules composed from existing primitives:
// BatchNorm1d/3d, InstanceNorm1d/2d/3d, PixelShuffle/Unshuffle, Upsample, Unfold/Fold,
// EmbeddingBag, Conv1d/3d and ConvTranspose1d/3d (the one conv op over 1 or 3 spatial
// dims), MaxPool1d/3d and AvgPool1d/3d (the 2-D pools on a unit height, or over (H, W)
// then D). For each fixture (frontend/testdata/modules_grad/CASE/, made by
// frontend/testdata/make_module_grad_fixtures.py; kCases lists the same cases) the
// forward, the updated state, and the gradients of sum(output · seed) w.r.t. the input
// and every parameter match PyTorch to 1e-5 on the reference interpreter; the same
// gradients match central finite differences in f64. The last tests pin user errors.

#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <source_location>

#include <gtest/gtest.h>

#include "autodiff/grad.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/testing/module_fixtures.h"
#include "frontend/testing/run_model.h"
#include "formats/npy.h"
#include "runtime/reference/interpreter.h"

namespace weft {
namespace {
namespace modules_grad_parity_test {  // this file's names, apart in its package's unity test

using testing::conv;
using testing::error_of;

constexpr char kDir[] = "frontend/testdata/modules_grad/";
constexpr double kTol = 1e-5;

struct Case {
  const char* name;
  std::function<ModulePtr()> make;
  bool training = false;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

UnfoldOptions patches(int64_t k, int64_t s = 1, int64_t p = 0, int64_t d = 1) {
  return UnfoldOptions{.kernel = k, .stride = s, .padding = p, .dilation = d};
}

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"batch_norm1d_nc_train", [] { return BatchNorm1d(3); }, /*training=*/true},
      {"batch_norm1d_ncl_train", [] { return BatchNorm1d(3); }, /*training=*/true},
      {"batch_norm1d_ncl_eval", [] { return BatchNorm1d(3); }},
      {"batch_norm3d_train", [] { return BatchNorm3d(3); }, /*training=*/true},
      {"batch_norm3d_eval", [] { return BatchNorm3d(3); }},
      {"instance_norm1d", [] { return InstanceNorm1d(3); }},
      {"instance_norm1d_affine", [] { return InstanceNorm1d(3, 1e-5, /*affine=*/true); }},
      {"instance_norm2d_affine", [] { return InstanceNorm2d(3, 1e-5, /*affine=*/true); }},
      {"instance_norm3d", [] { return InstanceNorm3d(2); }},
      {"pixel_shuffle2", [] { return PixelShuffle(2); }},
      {"pixel_shuffle3", [] { return PixelShuffle(3); }},
      {"pixel_unshuffle2", [] { return PixelUnshuffle(2); }},
      {"upsample_nearest1d", [] { return Upsample({.scale_factor = 2}); }},
      {"upsample_nearest2d_x3", [] { return Upsample({.scale_factor = 3}); }},
      {"upsample_nearest3d", [] { return Upsample({.scale_factor = 2}); }},
      {"upsample_bilinear", [] { return Upsample({.scale_factor = 2, .mode = UpsampleMode::bilinear}); }},
      {"upsample_bilinear_x3", [] { return Upsample({.scale_factor = 3, .mode = UpsampleMode::bilinear}); }},
      {"upsample_bilinear_align_corners",
       [] { return Upsample({.scale_factor = 2, .mode = UpsampleMode::bilinear, .align_corners = true}); }},
      {"unfold_k2", [] { return Unfold(patches(2)); }},
      {"unfold_k3_s2_p1", [] { return Unfold(patches(3, 2, 1)); }},
      {"unfold_k2_d2_p1", [] { return Unfold(patches(2, 1, 1, 2)); }},
      {"fold_k2", [] { return Fold(4, 5, patches(2)); }},
      {"fold_k3_s2_p1", [] { return Fold(6, 7, patches(3, 2, 1)); }},
      {"fold_k2_d2_p1", [] { return Fold(5, 5, patches(2, 1, 1, 2)); }},
      {"conv1d_basic", [] { return Conv1d(3, 4, conv(3)); }},
      {"conv1d_s2_p1_d2", [] { return Conv1d(2, 3, conv(3, 2, 1, 2)); }},
      {"conv1d_groups2_nobias", [] { return Conv1d(4, 6, conv(3, 1, 1, 1, 2, false)); }},
      {"conv_transpose1d_s2_p1_op1", [] { return ConvTranspose1d(4, 3, conv(3, 2, 1, 1, 1, true, 1)); }},
      {"conv_transpose1d_dilation_groups", [] { return ConvTranspose1d(4, 2, conv(3, 1, 0, 2, 2)); }},
      {"max_pool1d", [] { return MaxPool1d(2); }},
      {"max_pool1d_k3_s2_p1", [] { return MaxPool1d(3, 2, 1); }},
      {"avg_pool1d", [] { return AvgPool1d(2); }},
      {"avg_pool1d_k3_s2_p1", [] { return AvgPool1d(3, 2, 1); }},
      {"conv3d_basic", [] { return Conv3d(2, 3, conv(3)); }},
      {"conv3d_s2_p1_d2_groups2", [] { return Conv3d(4, 6, conv(3, 2, 1, 2, 2)); }},
      {"conv_transpose3d_s2_p1_op1", [] { return ConvTranspose3d(4, 2, conv(3, 2, 1, 1, 1, true, 1)); }},
      {"conv_transpose3d_groups2_nobias", [] { return ConvTranspose3d(4, 6, conv(2, 1, 0, 1, 2, false)); }},
      {"max_pool3d", [] { return MaxPool3d(2); }},
      {"max_pool3d_k3_s2_p1", [] { return MaxPool3d(3, 2, 1); }},
      {"avg_pool3d", [] { return AvgPool3d(2); }},
      {"avg_pool3d_k3_s2_p1", [] { return AvgPool3d(3, 2, 1); }},
      {"embedding_bag_sum", [] { return EmbeddingBag(10, 4, BagMode::sum); }},
      {"embedding_bag_mean", [] { return EmbeddingBag(10, 4, BagMode::mean); }},
      {"embedding_bag_max", [] { return EmbeddingBag(10, 4, BagMode::max); }},
  };
  return kCases;
}

Tensor load(const std::string& dir, const std::string& name) {
  return testing::load_npy(dir + "/" + name + ".npy");
}

/// `t` converted to f64 (integer tensors unchanged).
Tensor to_f64(const Tensor& t) {
  if (!is_floating(t.type().dtype)) return t;
  return Tensor::from_doubles(DType::f64, t.type().shape, t.to_doubles());
}

/// What the gradient is taken with respect to: the input "x" when it is floating point,
/// then every trained parameter (not the state), in the model's order.
std::vector<std::string> differentiable(const Model& model, const Tensor& x) {
  std::vector<std::string> wrt;
  if (is_floating(x.type().dtype)) wrt.push_back("x");
  for (const ParamInfo& p : model.parameters()) {
    if (p.kind == InputKind::param) wrt.push_back(p.name);
  }
  return wrt;
}

/// d sum(output · seed) / d each of `wrt`, by autodiff on the reference interpreter.
StatusOr<std::vector<Tensor>> gradients(const Model& model, const std::vector<std::string>& wrt,
                                        const Tensor& x, const std::map<std::string, Tensor>& params,
                                        const Tensor& seed) {
  StatusOr<Graph> grad = gradient_graph(model.graph(), 0, wrt, "seed");
  if (!grad.ok()) return grad.error();
  std::vector<Tensor> inputs;
  for (const Input& in : model.graph().inputs()) {
    const std::string& name = model.graph().value(in.value).name;
    inputs.push_back(params.count(name) ? params.at(name) : x);
  }
  inputs.push_back(seed);
  StatusOr<reference::RunResult> run = reference::run(*grad, inputs);
  if (!run.ok()) return run.error();
  return run->outputs;
}

class ModuleGradParity : public ::testing::TestWithParam<Case> {};

TEST_P(ModuleGradParity, MatchesPyTorch) {
  const Case& c = GetParam();
  const std::string dir = kDir + std::string(c.name);
  Tensor x = load(dir, "input");
  StatusOr<Model> model = FlowBuilder::from(c.make()).build({{"x", x.type()}}, {.training = c.training});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  StatusOr<std::map<std::string, Tensor>> params = testing::load_params(*model, dir);
  ASSERT_TRUE(params.ok()) << params.error().to_string();
  std::set<std::string> names;
  for (const ParamInfo& p : model->parameters()) names.insert(p.name);
  std::set<std::string> loaded;
  for (const auto& [name, t] : *params) loaded.insert(name);
  EXPECT_EQ(loaded, names);  // Every parameter and state tensor came from the fixture.

  StatusOr<testing::ModelRun> run = testing::run_model(*model, {x}, *params);
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  std::string why;
  EXPECT_TRUE(all_close(run->outputs[0], load(dir, "output"), kTol, &why)) << why;
  for (const auto& [name, t] : run->updated) {
    EXPECT_TRUE(all_close(t, load(dir, name + ".out"), kTol, &why)) << name << ": " << why;
  }
  EXPECT_EQ(run->updated.empty(), !c.training) << "only training updates state";

  const std::vector<std::string> wrt = differentiable(*model, x);
  StatusOr<std::vector<Tensor>> grads = gradients(*model, wrt, x, *params, load(dir, "seed"));
  ASSERT_TRUE(grads.ok()) << grads.error().to_string();
  for (size_t i = 0; i < wrt.size(); ++i) {
    const std::string file = "grad." + (wrt[i] == "x" ? std::string("input") : wrt[i]);
    EXPECT_TRUE(all_close((*grads)[i], load(dir, file), kTol, &why)) << wrt[i] << ": " << why;
  }
}

/// In f64 (EmbeddingBag's weight stays f32: its dtype does not follow the integer input),
/// autodiff's gradients against central differences of sum(output · seed).
TEST_P(ModuleGradParity, FiniteDifferences) {
  const Case& c = GetParam();
  const std::string dir = kDir + std::string(c.name);
  Tensor x = to_f64(load(dir, "input")), seed = load(dir, "seed");
  StatusOr<Model> model = FlowBuilder::from(c.make()).build({{"x", x.type()}}, {.training = c.training});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  if (model->graph().type(model->graph().outputs()[0]).dtype == DType::f64) seed = to_f64(seed);
  StatusOr<std::map<std::string, Tensor>> loaded = testing::load_params(*model, dir);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  std::map<std::string, Tensor> values;
  for (const ParamInfo& p : model->parameters()) {
    const Tensor& t = loaded->at(p.name);
    values[p.name] = model->graph().type(p.value).dtype == DType::f64 ? to_f64(t) : t;
  }
  const std::vector<std::string> wrt = differentiable(*model, x);
  StatusOr<std::vector<Tensor>> grads = gradients(*model, wrt, x, values, seed);
  ASSERT_TRUE(grads.ok()) << grads.error().to_string();

  auto objective = [&](const Tensor& xv, const std::map<std::string, Tensor>& pv) {
    StatusOr<testing::ModelRun> run = testing::run_model(*model, {xv}, pv);
    if (!run.ok()) {
      ADD_FAILURE() << run.error().to_string();
      return std::nan("");
    }
    double s = 0;
    for (int64_t i = 0; i < seed.numel(); ++i) s += seed.get_double(i) * run->outputs[0].get_double(i);
    return s;
  };
  for (size_t k = 0; k < wrt.size(); ++k) {
    const Tensor& base = wrt[k] == "x" ? x : values.at(wrt[k]);
    const bool f64 = base.type().dtype == DType::f64;
    const double h = f64 ? 1e-6 : 1e-2, tol = f64 ? 1e-6 : 1e-3;
    for (int64_t i = 0; i < base.numel(); ++i) {
      Tensor plus = base, minus = base;
      plus.set_double(i, base.get_double(i) + h);
      minus.set_double(i, base.get_double(i) - h);
      auto with = [&](const Tensor& t) {
        std::map<std::string, Tensor> pv = values;
        if (wrt[k] != "x") pv[wrt[k]] = t;
        return objective(wrt[k] == "x" ? t : x, pv);
      };
      const double numeric = (with(plus) - with(minus)) / (2 * h);
      EXPECT_NEAR((*grads)[k].get_double(i), numeric, tol * (1 + std::abs(numeric)))
          << wrt[k] << "[" << i << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModuleGradParity, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(ModuleGradParityFixtures, EveryFixtureHasACase) {
  std::set<std::string> listed;
  for (const Case& c : cases()) listed.insert(c.name);
  EXPECT_EQ(testing::fixture_dirs(kDir), listed);
}

// ---- User errors: each names the module, what it expected and what it got, at the
// ---- builder call (file:line:column).

const std::string kFile = "frontend/modules_grad_parity_test.cc";

std::string at(int line) { return kFile + ":" + std::to_string(line) + ":"; }

TEST(ModuleGradErrors, Normalization) {
  int line = __LINE__ + 1;
  std::string e1 = error_of(BatchNorm1d(3), {{"x", f32({2, 4})}});
  EXPECT_EQ(e1, at(line) + "28: error: BatchNorm1d(3) expects an input [N,3] or [N,3,L], got "
                "f32[2,4] [in BatchNorm1d(3)]");
  line = __LINE__ + 1;
  std::string e2 = error_of(BatchNorm3d(3), {{"x", f32({2, 3, 4, 4})}});
  EXPECT_EQ(e2, at(line) + "28: error: BatchNorm3d(3) expects an NCDHW input [N,3,D,H,W], got "
                "f32[2,3,4,4] [in BatchNorm3d(3)]");
  line = __LINE__ + 1;
  std::string e3 = error_of(BatchNorm1d(3), {{"x", f32({1, 3})}});
  EXPECT_EQ(e3, at(line) + "28: error: BatchNorm1d(3) in training needs more than one value per "
                "channel to compute the batch variance, got f32[1,3] [in BatchNorm1d(3)]");
  line = __LINE__ + 1;
  std::string e4 = error_of(InstanceNorm2d(3, 1e-5, true), {{"x", f32({2, 3, 4})}});
  EXPECT_EQ(e4, at(line) + "28: error: InstanceNorm2d(3, affine) expects an input [N,3,2 spatial "
                "dims], got f32[2,3,4] [in InstanceNorm2d(3, affine)]");
}

TEST(ModuleGradErrors, Resampling) {
  int line = __LINE__ + 1;
  std::string e1 = error_of(PixelShuffle(2), {{"x", f32({1, 6, 2, 2})}});
  EXPECT_EQ(e1, at(line) + "28: error: PixelShuffle(2) needs the channels of f32[1,6,2,2] to "
                "divide by 4 [in PixelShuffle(2)]");
  line = __LINE__ + 1;
  std::string e2 = error_of(PixelUnshuffle(2), {{"x", f32({1, 1, 3, 4})}});
  EXPECT_EQ(e2, at(line) + "28: error: PixelUnshuffle(2) needs the height and width of "
                "f32[1,1,3,4] to divide by 2 [in PixelUnshuffle(2)]");
  line = __LINE__ + 1;
  std::string e3 = error_of(Upsample({.mode = UpsampleMode::bilinear}), {{"x", f32({1, 2, 3})}});
  EXPECT_EQ(e3, at(line) + "28: error: Upsample(x2, bilinear) expects an input [N,C,2 spatial "
                "dims], got f32[1,2,3] [in Upsample(x2, bilinear)]");
  line = __LINE__ + 1;
  std::string e4 = error_of(Upsample({.align_corners = true}), {{"x", f32({1, 2, 3})}});
  EXPECT_EQ(e4, at(line) + "28: error: Upsample(x2, nearest, align_corners): align_corners "
                "applies to bilinear upsampling only [in Upsample(x2, nearest, align_corners)]");
  line = __LINE__ + 1;
  std::string e5 = error_of(Upsample({.scale_factor = 0}), {{"x", f32({1, 2, 3})}});
  EXPECT_EQ(e5, at(line) + "28: error: Upsample(x0, nearest): the scale factor must be >= 1 "
                "[in Upsample(x0, nearest)]");
  line = __LINE__ + 1;
  std::string e6 = error_of(Upsample(), {{"x", f32({2, 3})}});
  EXPECT_EQ(e6, at(line) + "28: error: Upsample(x2, nearest) expects an input [N,C,1 to 3 "
                "spatial dims], got f32[2,3] [in Upsample(x2, nearest)]");
}

TEST(ModuleGradErrors, OneDimensionalConvolutionsAndPools) {
  int line = __LINE__ + 1;
  std::string e1 = error_of(Conv1d(3, 8), {{"x", f32({2, 3, 8, 8})}});
  EXPECT_EQ(e1, at(line) + "28: error: Conv1d(3->8, k3, s1, p0) expects an NCL input [N,3,L], got "
                "f32[2,3,8,8] [in Conv1d(3->8, k3, s1, p0)]");
  line = __LINE__ + 1;
  std::string e2 = error_of(Conv1d(3, 8, conv(5)), {{"x", f32({1, 3, 4})}});
  EXPECT_EQ(e2, at(line) + "28: error: Conv1d(3->8, k5, s1, p0): the input f32[1,3,4] is too small "
                "for a kernel of extent 5 (output would be 0) [in Conv1d(3->8, k5, s1, p0)]");
  line = __LINE__ + 1;
  std::string e3 = error_of(Conv1d(3, 8, conv(3, 2, 0, 1, 1, true, 1)), {{"x", f32({1, 3, 8})}});
  EXPECT_EQ(e3, at(line) + "28: error: Conv1d(3->8, k3, s2, p0, op1): output_padding applies to "
                "transposed convolutions only [in Conv1d(3->8, k3, s2, p0, op1)]");
  line = __LINE__ + 1;
  std::string e4 = error_of(ConvTranspose1d(4, 2), {{"x", f32({1, 2, 4})}});
  EXPECT_EQ(e4, at(line) + "28: error: ConvTranspose1d(4->2, k3, s1, p0) expects an NCL input "
                "[N,4,L], got f32[1,2,4] [in ConvTranspose1d(4->2, k3, s1, p0)]");
  line = __LINE__ + 1;
  std::string e5 = error_of(MaxPool1d(2), {{"x", f32({1, 3, 8, 8})}});
  EXPECT_EQ(e5, at(line) + "28: error: MaxPool1d(k2, s2, p0) expects an NCL input [N,C,L], got "
                "f32[1,3,8,8] [in MaxPool1d(k2, s2, p0)]");
  line = __LINE__ + 1;
  std::string e6 = error_of(AvgPool1d(5), {{"x", f32({1, 3, 4})}});
  EXPECT_EQ(e6, at(line) + "28: error: AvgPool1d(k5, s5, p0): the window is larger than the padded "
                "input f32[1,3,4] [in AvgPool1d(k5, s5, p0)]");
}

TEST(ModuleGradErrors, ThreeDimensionalConvolutionsAndPools) {
  int line = __LINE__ + 1;
  std::string e1 = error_of(Conv3d(3, 8), {{"x", f32({2, 3, 8, 8})}});
  EXPECT_EQ(e1, at(line) + "28: error: Conv3d(3->8, k3, s1, p0) expects an NCDHW input "
                "[N,3,D,H,W], got f32[2,3,8,8] [in Conv3d(3->8, k3, s1, p0)]");
  line = __LINE__ + 1;
  std::string e2 = error_of(Conv3d(3, 8, conv(3)), {{"x", f32({1, 3, 2, 4, 4})}});
  EXPECT_EQ(e2, at(line) + "28: error: Conv3d(3->8, k3, s1, p0): the input f32[1,3,2,4,4] is too "
                "small for a kernel of extent 3 (output would be 0x2x2) [in Conv3d(3->8, k3, s1, "
                "p0)]");
  line = __LINE__ + 1;
  std::string e3 = error_of(ConvTranspose3d(4, 2, conv(2, 2, 0, 1, 1, true, 2)),
                            {{"x", f32({1, 4, 2, 2, 2})}});
  EXPECT_EQ(e3, at(line) + "28: error: ConvTranspose3d(4->2, k2, s2, p0, op2): output_padding=2 "
                "must be smaller than stride=2 [in ConvTranspose3d(4->2, k2, s2, p0, op2)]");
  line = __LINE__ + 1;
  std::string e4 = error_of(MaxPool3d(2), {{"x", f32({1, 3, 8, 8})}});
  EXPECT_EQ(e4, at(line) + "28: error: MaxPool3d(k2, s2, p0) expects an NCDHW input [N,C,D,H,W], "
                "got f32[1,3,8,8] [in MaxPool3d(k2, s2, p0)]");
  line = __LINE__ + 1;
  std::string e5 = error_of(AvgPool3d(3), {{"x", f32({1, 3, 2, 8, 8})}});
  EXPECT_EQ(e5, at(line) + "28: error: AvgPool3d(k3, s3, p0): the window is larger than the padded "
                "input f32[1,3,2,8,8] [in AvgPool3d(k3, s3, p0)]");
}

TEST(ModuleGradErrors, PatchesAndBags) {
  int line = __LINE__ + 1;
  std::string e1 = error_of(Unfold(patches(5)), {{"x", f32({1, 2, 4, 4})}});
  EXPECT_EQ(e1, at(line) + "28: error: Unfold(k5, s1, p0, d1): no patch fits in the padded input "
                "f32[1,2,4,4] [in Unfold(k5, s1, p0, d1)]");
  line = __LINE__ + 1;
  std::string e2 = error_of(Fold(4, 5, patches(2)), {{"x", f32({2, 12, 10})}});
  EXPECT_EQ(e2, at(line) + "28: error: Fold(4x5, k2, s1, p0, d1) expects an input [N, C·4, 12] "
                "(3x4 patches), got f32[2,12,10] [in Fold(4x5, k2, s1, p0, d1)]");
  line = __LINE__ + 1;
  std::string e3 = error_of(Unfold(patches(2, 0)), {{"x", f32({1, 2, 4, 4})}});
  EXPECT_EQ(e3, at(line) + "28: error: Unfold(k2, s0, p0, d1): kernel, stride and dilation must "
                "be >= 1, padding >= 0 [in Unfold(k2, s0, p0, d1)]");
  line = __LINE__ + 1;
  std::string e4 = error_of(EmbeddingBag(10, 4), {{"x", i64({6})}});
  EXPECT_EQ(e4, at(line) + "28: error: EmbeddingBag(10, 4, mean) expects integer indices (i64 or "
                "i32) in fixed-size bags [B, L], got i64[6] [in EmbeddingBag(10, 4, mean)]");
}

}  // namespace modules_grad_parity_test
}  // namespace
}  // namespace weft
