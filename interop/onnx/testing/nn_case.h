#pragma once
// Helpers shared by the nn converters' tests (ops_conv_pool_test, ops_norm_loss_test,
// ops_nn_test): tensors to feed, ONNX's backend tolerances, a one-node model run on the
// reference interpreter or imported for its error (and node_case.h's f32). In a namespace
// of their own, so that each test file names the ones it uses (`using nn_case::run_ok;`):
// node_case.h has an iota_f32 of its own.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "interop/onnx/importer.h"
#include "interop/onnx/testing/node_case.h"  // f32
#include "interop/onnx/testing/onnx_builder.h"

namespace weft::onnx_io::nn_case {

inline Tensor iota_f32(Shape s, double start = 0, double step = 1) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * static_cast<double>(i);
  return Tensor::from_doubles(DType::f32, std::move(s), v);
}

/// Whether `got` matches `want` within ONNX's backend tolerances (rtol 1e-3, atol 1e-5).
inline bool close(const Tensor& got, const Tensor& want, std::string* why) {
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

inline void expect_close(const Tensor& got, const Tensor& want) {
  std::string why;
  EXPECT_TRUE(close(got, want, &why)) << why;
}

/// The outputs of a one-node model run on `inputs` (inference unless `training`).
inline std::vector<Tensor> run_ok(const OnnxBuilder& b, std::vector<Tensor> inputs, bool training = false) {
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), std::move(inputs), {}, training);
  EXPECT_TRUE(y.ok()) << y.error().to_string();
  return y.ok() ? *y : std::vector<Tensor>{};
}

/// Writes the model to the test's temporary folder as `name`; returns its path.
inline std::string save(const OnnxBuilder& b, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::string bytes;
  EXPECT_TRUE(b.model().SerializeToString(&bytes));
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

inline std::string import_error(const OnnxBuilder& b, bool training = false) {
  StatusOr<ImportedGraph> g = import_onnx(b.file(), {}, training);
  return g.ok() ? "imported" : g.error().message;
}

inline Tensor pseudo_random(Shape s, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  uint32_t state = seed;
  for (double& d : v) {
    state = state * 1664525u + 1013904223u;
    d = static_cast<double>(state >> 8) / static_cast<double>(1u << 24) * 2 - 1;
  }
  return Tensor::from_doubles(DType::f32, std::move(s), v);
}

}  // namespace weft::onnx_io::nn_case
