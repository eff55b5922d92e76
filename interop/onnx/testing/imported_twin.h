#pragma once
// A benchmark-suite model (bench/models.h) and its ONNX twin: the builder's network, and
// the same network exported as ONNX (its eval-mode forward with its initial values,
// exporter.h) and imported back as the first module of a flow (OnnxModel), each compiled
// as the suite's training step (its loss, Adam). What the issue's goal "an imported
// model's step is as fast as the same model written with the builder (same IR after
// canonicalization)" compares: imported_ir_test (the compiled steps' histograms) and
// imported_step_bench (their step times).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/models.h"
#include "frontend/training.h"

namespace weft::onnx_io {

struct Twins {
  bench::BenchModel model;
  Trainer builder;
  Trainer imported;
};

/// Compiles model `name`'s step from the builder and from its ONNX export (written into
/// `dir`) on `backend`.
StatusOr<Twins> compile_twins(const std::string& name, const std::string& dir, const std::string& backend = "cpu");

/// A compiled step's shape: `kernels` (generated kernels), `invocations`, and each
/// invocation's kind, with the op of library and contraction ones (`library:matmul`).
std::map<std::string, int64_t> step_histogram(const Program& p);

/// Random step inputs of `m` (the batch, then the target), seeded.
std::vector<Tensor> random_batch(const bench::BenchModel& m, uint64_t seed);

}  // namespace weft::onnx_io
