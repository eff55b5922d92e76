// The nn converters together (ops/nn.cc, pool.cc, norm.cc, loss.cc): gradients through
// them against finite differences, every other error of theirs pinned, and ONNX's own
// backend test data for these ops (per-op pass counts printed; the cases known to pass
// are required to). Each family's own cases: ops_conv_pool_test, ops_norm_loss_test.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "frontend/flow.h"
#include "frontend/testing/gradcheck.h"
#include "interop/onnx/reader.h"
#include "interop/onnx/testing/nn_case.h"

namespace weft::onnx_io {
namespace {
namespace ops_nn_test {  // this file's names, apart in its package's unity test

using nn_case::close;
using nn_case::save;
using nn_case::import_error;
using nn_case::pseudo_random;

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Trained in weft: what the converters emit is differentiable like any graph.

Tensor as_f64(const Tensor& t) { return Tensor::from_doubles(DType::f64, t.shape(), t.to_doubles()); }

TEST(OnnxNnTraining, GradientsThroughEveryConverterMatchFiniteDifferences) {
  // Conv (asymmetric pads) -> BatchNormalization (batch statistics) -> MaxPool (dilated,
  // ceil) -> AveragePool (pads not counted) -> ConvTranspose (asymmetric, output_padding)
  // -> InstanceNormalization -> LRN -> LayerNormalization, in f64.
  OnnxBuilder b(17);
  b.input("x", DType::f64, {2, 2, 7, 7});
  b.initializer("w", as_f64(pseudo_random({3, 2, 3, 2}, 20))).initializer("cb", as_f64(pseudo_random({3}, 21)));
  b.initializer("bn_s", as_f64(pseudo_random({3}, 22))).initializer("bn_b", as_f64(pseudo_random({3}, 23)));
  b.initializer("bn_m", as_f64(f32({3}, {0, 0, 0}))).initializer("bn_v", as_f64(f32({3}, {1, 1, 1})));
  b.initializer("tw", as_f64(pseudo_random({3, 2, 2, 2}, 24)));
  b.initializer("in_s", as_f64(pseudo_random({2}, 25))).initializer("in_b", as_f64(pseudo_random({2}, 26)));
  b.initializer("ln_s", as_f64(pseudo_random({11}, 27)));
  auto& conv = b.node("Conv", {"x", "w", "cb"}, {"c"});
  set_attr(conv, "pads", std::vector<int64_t>{1, 0, 0, 1});
  b.node("BatchNormalization", {"c", "bn_s", "bn_b", "bn_m", "bn_v"}, {"bn"});
  auto& mp = b.node("MaxPool", {"bn"}, {"mp"});
  set_attr(mp, "kernel_shape", std::vector<int64_t>{2, 2});
  set_attr(mp, "dilations", std::vector<int64_t>{2, 1});
  set_attr(mp, "ceil_mode", int64_t{1});
  auto& ap = b.node("AveragePool", {"mp"}, {"ap"});
  set_attr(ap, "kernel_shape", std::vector<int64_t>{2, 2});
  set_attr(ap, "pads", std::vector<int64_t>{1, 0, 0, 1});
  auto& ct = b.node("ConvTranspose", {"ap", "tw"}, {"ct"});
  set_attr(ct, "strides", std::vector<int64_t>{2, 2});
  set_attr(ct, "pads", std::vector<int64_t>{1, 0, 0, 1});
  set_attr(ct, "output_padding", std::vector<int64_t>{1, 0});
  b.node("InstanceNormalization", {"ct", "in_s", "in_b"}, {"in"});
  set_attr(b.node("LRN", {"in"}, {"lrn"}), "size", int64_t{2});
  onnx::NodeProto& ln = b.node("LayerNormalization", {"lrn", "ln_s"}, {"y"});
  set_attr(ln, "axis", int64_t{-1});
  set_attr(ln, "stash_type", int64_t{11});  // statistics in f64 too (the default is f32)
  b.output("y", DType::f64);
  StatusOr<Model> m = FlowBuilder::from(OnnxModel(save(b, "trained.onnx")))
                          .build({{"x", Type{DType::f64, {2, 2, 7, 7}}}}, BuildOptions{.training = true});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  // H 7 -> conv 6 -> max 4 -> avg 4 -> transposed 3·2+2-1+1 = 8; W 7 -> 7 -> 6 -> 6 -> 5·2+2-1 = 11.
  EXPECT_EQ(m->graph().type(m->graph().outputs()[0]).to_string(), "f64[2,2,8,11]");
  testing::expect_gradients_match_finite_differences(*m, as_f64(pseudo_random({2, 2, 7, 7}, 28)), 1e-5);
}

// ---------------------------------------------------------------------------
// Every other error of these converters, pinned.

struct ErrorCase {
  const char* op;
  int opset;
  Type x;                          ///< The graph input, the node's first input.
  std::vector<Tensor> more;        ///< The node's other inputs, as initializers.
  std::function<void(onnx::NodeProto&)> attrs;
  const char* message;             ///< After "node 'n' (OP, opset N): ".
  bool training = false;
};

Tensor zeros(Type t) { return Tensor(std::move(t)); }

TEST(OnnxNnErrors, EachMessageIsPinned) {
  using Ints = std::vector<int64_t>;
  const Type x4{DType::f32, {1, 2, 4, 4}};
  const Tensor w4 = zeros({DType::f32, {2, 2, 3, 3}});
  auto none = [](onnx::NodeProto&) {};
  const std::vector<ErrorCase> cases = {
      {"Conv", 17, {DType::f32, {1, 1, 2, 2, 2, 2}}, {zeros({DType::f32, {1, 1, 1, 1, 1, 1}})}, none,
       "an input of rank 6 (weft convolves over 1 to 3 spatial dims) is not supported"},
      {"Conv", 17, x4, {zeros({DType::f32, {2, 2, 3}})}, none, "the weight [2,2,3] must have the input's rank 4"},
      {"Conv", 17, x4, {w4}, [](auto& n) { set_attr(n, "kernel_shape", Ints{2, 2}); },
       "kernel_shape [2,2] disagrees with the weight [2,2,3,3]"},
      {"Conv", 17, x4, {w4}, [](auto& n) { set_attr(n, "group", int64_t{0}); }, "group must be >= 1"},
      {"Conv", 17, x4, {w4}, [](auto& n) { set_attr(n, "strides", Ints{1}); },
       "attribute 'strides' has 1 entries, expected 2"},
      {"Conv", 17, x4, {w4}, [](auto& n) { set_attr(n, "pads", Ints{0, -1, 0, 0}); },
       "attribute 'pads' with an entry below 0 is not supported"},
      {"Conv", 17, x4, {w4},
       [](auto& n) {
         set_attr(n, "auto_pad", "SAME_UPPER");
         set_attr(n, "pads", Ints{1, 1, 1, 1});
       },
       "auto_pad SAME_UPPER and pads are given together"},
      {"ConvTranspose", 17, x4, {zeros({DType::f32, {3, 1, 2, 2}})}, none,
       "the weight [3,1,2,2] must be [C_in, C_out/group, *kernel] for the input [1,2,4,4] and group 1"},
      {"ConvTranspose", 17, x4, {w4}, [](auto& n) { set_attr(n, "output_shape", Ints{9}); },
       "output_shape needs one entry per spatial dim"},
      {"ConvTranspose", 17, x4, {w4}, [](auto& n) { set_attr(n, "pads", Ints{3, 0, 3, 0}); },
       "the output would be empty on spatial axis 0"},
      {"ConvTranspose", 17, x4, {w4}, [](auto& n) { set_attr(n, "output_padding", Ints{1}); },
       "attribute 'output_padding' has 1 entries, expected 2"},
      {"MaxPool", 17, {DType::f32, {2, 3}}, {}, [](auto& n) { set_attr(n, "kernel_shape", Ints{2}); },
       "an input of rank 2 (weft pools over 1 to 3 spatial dims) is not supported"},
      {"MaxPool", 17, x4, {}, none, "kernel_shape is required"},
      {"MaxPool", 17, x4, {}, [](auto& n) { set_attr(n, "kernel_shape", Ints{2}); },
       "kernel_shape [2] needs one entry per spatial dim of f32[1,2,4,4]"},
      {"AveragePool", 17, x4, {}, [](auto& n) { set_attr(n, "kernel_shape", Ints{0, 2}); },
       "the kernel's sizes must be >= 1"},
      {"GlobalMaxPool", 17, {DType::f32, {2, 3}}, {}, none, "the input must be [N, C, *spatial], got f32[2,3]"},
      {"BatchNormalization", 15, {DType::f32, {2}}, {}, none, "the input must be [N, C, ...], got f32[2]"},
      {"BatchNormalization", 15, {DType::f32, {2, 2}},
       {zeros({DType::f32, {2}}), zeros({DType::f32, {2}}), zeros({DType::f32, {3}}), zeros({DType::f32, {2}})},
       none, "scale, B, mean and var must be [2], got f32[3]"},
      {"InstanceNormalization", 17, {DType::f32, {2, 2}}, {zeros({DType::f32, {2}}), zeros({DType::f32, {2}})},
       none, "the input must be [N, C, *spatial], got f32[2,2]"},
      {"LayerNormalization", 17, {DType::f32, {2, 3}}, {zeros({DType::f32, {3}})},
       [](auto& n) { set_attr(n, "axis", int64_t{2}); }, "axis 2 is outside f32[2,3]"},
      {"LRN", 17, x4, {}, none, "size is required"},
      {"LRN", 17, x4, {}, [](auto& n) { set_attr(n, "size", int64_t{0}); }, "size must be >= 1"},
      {"LRN", 17, {DType::f32, {3}}, {}, [](auto& n) { set_attr(n, "size", int64_t{1}); },
       "the input must be [N, C, ...], got f32[3]"},
      // No channels: one value per channel here (the count divided by zero: SIGFPE).
      {"BatchNormalization", 15, {DType::f32, {1, 0}},
       {zeros({DType::f32, {0}}), zeros({DType::f32, {0}}), zeros({DType::f32, {0}}), zeros({DType::f32, {0}})},
       none, "training needs more than one value per channel to compute the batch variance, got f32[1,0]",
       /*training=*/true},
      {"Dropout", 10, x4, {}, [](auto& n) { set_attr(n, "ratio", 1.0); }, "the ratio must be in [0, 1), got 1.0",
       /*training=*/true},
      {"NegativeLogLikelihoodLoss", 13, {DType::f32, {3}}, {zeros({DType::i64, {3}})}, none,
       "the input must be [N, C, ...], got f32[3]"},
      {"NegativeLogLikelihoodLoss", 13, {DType::f32, {2, 3}}, {zeros({DType::f32, {2}})}, none,
       "the target must hold class indices, got f32[2]"},
      {"NegativeLogLikelihoodLoss", 13, {DType::f32, {2, 3}}, {zeros({DType::i64, {2}})},
       [](auto& n) { set_attr(n, "reduction", "avg"); }, "reduction 'avg' is not none, sum or mean"},
      {"SoftmaxCrossEntropyLoss", 13, {DType::f32, {2, 3}}, {zeros({DType::i64, {2}}), zeros({DType::f32, {2}})},
       none, "the weight must be f32[3], got f32[2]"},
  };
  for (const ErrorCase& c : cases) {
    OnnxBuilder b(c.opset);
    b.input("x", c.x.dtype, c.x.shape.dims);
    std::vector<std::string> inputs = {"x"};
    for (size_t i = 0; i < c.more.size(); ++i) {
      inputs.push_back("in" + std::to_string(i + 1));
      b.initializer(inputs.back(), c.more[i]);
    }
    c.attrs(b.node(c.op, inputs, {"y"}, "n"));
    b.output("y", DType::f32);
    EXPECT_EQ(import_error(b, c.training),
              "node 'n' (" + std::string(c.op) + ", opset " + std::to_string(c.opset) + "): " + c.message);
  }
}

// An empty batch (`weftc import --dim batch=0`) or no channels: LRN and BatchNormalization
// divided their element count by it (SIGFPE while importing); now they import.
TEST(OnnxNnErrors, EmptyBatchesAndChannelsImport) {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0, 2, 4, 4}, std::vector<int64_t>{2, 0, 4, 4}}) {
    OnnxBuilder lrn(17);
    lrn.input("x", DType::f32, dims);
    set_attr(lrn.node("LRN", {"x"}, {"y"}, "n"), "size", int64_t{3});
    lrn.output("y", DType::f32);
    EXPECT_EQ(import_error(lrn), "imported");
    OnnxBuilder bn(15);
    bn.input("x", DType::f32, dims);
    const Tensor c = zeros({DType::f32, {dims[1]}});
    bn.initializer("s", c).initializer("b", c).initializer("m", c).initializer("v", c);
    bn.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "n");
    bn.output("y", DType::f32);
    EXPECT_EQ(import_error(bn), "imported");
  }
}

// ---------------------------------------------------------------------------
// ONNX's backend test data.

struct CaseResult {
  bool pass = false;
  std::string why;
};

CaseResult run_case(const fs::path& dir) {
  StatusOr<OnnxFile> file = read_onnx_model((dir / "model.onnx").string());
  if (!file.ok()) return {false, file.error().message};
  const fs::path data = dir / "test_data_set_0";
  // input_0.pb, input_1.pb... (or output_*), in order.
  auto read_all = [&](const std::string& kind) -> StatusOr<std::vector<Tensor>> {
    std::vector<Tensor> out;
    for (int i = 0; fs::exists(data / (kind + std::to_string(i) + ".pb")); ++i) {
      WEFT_ASSIGN_OR_RETURN(Tensor t, read_onnx_tensor((data / (kind + std::to_string(i) + ".pb")).string()));
      out.push_back(std::move(t));
    }
    return out;
  };
  StatusOr<std::vector<Tensor>> inputs = read_all("input_"), outputs = read_all("output_");
  if (!inputs.ok()) return {false, inputs.error().message};
  if (!outputs.ok()) return {false, outputs.error().message};
  StatusOr<std::vector<Tensor>> got = import_and_run(*file, std::move(*inputs));
  if (!got.ok()) return {false, got.error().message};
  if (got->size() != outputs->size()) return {false, "output count"};
  for (size_t i = 0; i < outputs->size(); ++i) {
    std::string why;
    if (!close((*got)[i], (*outputs)[i], &why)) return {false, "output " + std::to_string(i) + ": " + why};
  }
  return {true, ""};
}

const char* const kDataRoot = "/usr/include/onnx/backend/test/data";

// The cases of these ops, by folder prefix (lower case), and the group each counts in.
const std::pair<const char*, const char*> kPrefixes[] = {
    {"node/test_conv", "Conv"},           {"node/test_convtranspose", "ConvTranspose"},
    {"node/test_maxpool", "MaxPool"},     {"node/test_averagepool", "AveragePool"},
    {"node/test_globalaveragepool", "GlobalAveragePool"},
    {"node/test_globalmaxpool", "GlobalMaxPool"},
    {"node/test_batchnorm", "BatchNormalization"}, {"node/test_dropout", "Dropout"},
    {"node/test_training_dropout", "Dropout"},
    {"node/test_layer_normalization", "LayerNormalization"},
    {"node/test_instancenorm", "InstanceNormalization"}, {"node/test_lrn", "LRN"},
    {"node/test_mvn", "MeanVarianceNormalization"}, {"node/test_nllloss", "NegativeLogLikelihoodLoss"},
    {"node/test_sce", "SoftmaxCrossEntropyLoss"}, {"node/test_lppool", "LpPool"},
    {"pytorch-converted/test_conv", "Conv"}, {"pytorch-converted/test_convtranspose", "ConvTranspose"},
    {"pytorch-converted/test_avgpool", "AveragePool"}, {"pytorch-converted/test_maxpool", "MaxPool"},
    {"pytorch-converted/test_batchnorm", "BatchNormalization"},
    {"pytorch-operator/test_operator_conv", "Conv"}, {"pytorch-operator/test_operator_maxpool", "MaxPool"},
};

// The cases allowed to fail, and why.
const std::pair<const char*, const char*> kMayFail[] = {
    {"_expanded", "the function bodies use ops of other families (Cast, Unsqueeze, ReduceMean...)"},
    {"test_convinteger", "ConvInteger (quantized) has no converter"},
    {"test_maxpool_with_argmax", "MaxPool's Indices output (refused)"},
    {"test_training_dropout", "training_mode fed at run time, and ONNX's random numbers are NumPy's"},
    {"pytorch-converted/test_AvgPool1d", "exported with Unsqueeze (another family)"},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(OnnxNnTestData, PassCountsPerOp) {
  if (!fs::exists(kDataRoot)) GTEST_SKIP() << "no ONNX test data at " << kDataRoot;
  std::map<std::string, std::pair<int, int>> counts;  // group -> (passed, cases)
  std::set<std::string> passed;
  std::vector<std::string> cases;
  for (const char* folder : {"node", "pytorch-converted", "pytorch-operator"}) {
    for (const auto& d : fs::directory_iterator(fs::path(kDataRoot) / folder)) {
      const std::string name = std::string(folder) + "/" + d.path().filename().string();
      const char* group = nullptr;
      size_t best = 0;
      for (const auto& [prefix, g] : kPrefixes) {
        const std::string p = prefix;
        if (lower(name).rfind(p, 0) == 0 && p.size() > best) {
          best = p.size();
          group = g;
        }
      }
      if (group != nullptr) cases.push_back(name + "\t" + group);
    }
  }
  std::sort(cases.begin(), cases.end());
  for (const std::string& c : cases) {
    const std::string name = c.substr(0, c.find('\t')), group = c.substr(c.find('\t') + 1);
    CaseResult r = run_case(fs::path(kDataRoot) / name);
    counts[group].second++;
    if (r.pass) {
      counts[group].first++;
      passed.insert(name);
    }
    std::printf("%-4s %s%s%s\n", r.pass ? "ok" : "FAIL", name.c_str(), r.pass ? "" : ": ", r.why.c_str());
  }
  for (const auto& [group, pc] : counts) std::printf("%-28s %d / %d\n", group.c_str(), pc.first, pc.second);
  // Every other case must pass.
  for (const std::string& c : cases) {
    const std::string name = c.substr(0, c.find('\t'));
    if (passed.count(name)) continue;
    const char* reason = nullptr;
    for (const auto& [part, why] : kMayFail) {
      if (name.find(part) != std::string::npos) reason = why;
    }
    EXPECT_NE(reason, nullptr) << name << " fails";
  }
}

}  // namespace ops_nn_test
}  // namespace
}  // namespace weft::onnx_io
