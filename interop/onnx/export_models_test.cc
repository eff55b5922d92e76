// The benchmark suite's ten models (bench/models.h, cpu preset; the recurrent ones as
// ONNX Scan and Loop) exported as their inference
// forward (BuildOptions{training=false}): each passes ONNX's checker and strict shape
// inference, and imported back (the recurrent ones through ops/control.cc) computes what
// the weft graph does on the same inputs and parameters.
#include <gtest/gtest.h>

#include <random>

#include "bench/models.h"
#include "frontend/init_params.h"
#include "interop/onnx/exporter.h"
#include "interop/onnx/testing/export_round_trip.h"

namespace weft::onnx_io {
namespace {
namespace export_models_test {  // this file's names, apart in its package's unity test

/// Data inputs: floats uniform in [-1, 1), integers (tokens) in [0, token_range).
std::vector<Tensor> data_inputs(const Graph& g, int64_t token_range) {
  std::mt19937_64 rng(7);
  std::vector<Tensor> out;
  for (const Input& in : g.inputs()) {
    if (in.kind != InputKind::data) continue;
    Tensor t(g.type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.set_double(i, is_floating(t.dtype())
                          ? std::uniform_real_distribution<double>(-1, 1)(rng)
                          : static_cast<double>(std::uniform_int_distribution<int64_t>(
                                0, std::max<int64_t>(token_range, 1) - 1)(rng)));
    }
    out.push_back(std::move(t));
  }
  return out;
}

class ExportBenchModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportBenchModel, ExportsTheForwardAndRoundTrips) {
  StatusOr<bench::BenchModel> b = bench::make_bench_model(GetParam(), bench::Preset::cpu);
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  StatusOr<Model> model = b->net->build(b->inputs, {.training = false});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  StatusOr<std::map<std::string, Tensor>> values = initialize_parameter_map(*model, /*seed=*/3);
  ASSERT_TRUE(values.ok()) << values.error().to_string();
  StatusOr<onnx::ModelProto> m = export_model(*model, *values);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->graph().initializer_size(), static_cast<int>(model->parameters().size()));
  EXPECT_EQ(m->graph().output_size(), static_cast<int>(model->graph().outputs().size()));

  RoundTrip r = export_round_trip(model->graph(), *values, data_inputs(model->graph(), b->token_range),
                                  /*tol=*/1e-4);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.importer_gap, "");
  EXPECT_TRUE(r.same) << r.why;
}

INSTANTIATE_TEST_SUITE_P(FeedForward, ExportBenchModel,
                         ::testing::Values("mlp", "convnet", "residual_tower", "conv_autoenc",
                                           "transformer", "gated_routing"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Loops, ExportBenchModel,
                         ::testing::Values("feedback_fixed", "iterative_refine", "gru_seq", "lstm_seq"),
                         [](const auto& info) { return info.param; });

}  // namespace export_models_test
}  // namespace
}  // namespace weft::onnx_io
