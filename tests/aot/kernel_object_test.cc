// Kernels compiled ahead of time (codegen's weft_kernel_object, run by a genrule at build
// time) are linked into this test like any object file — no MLIR, no LLVM — and compute
// what the reference interpreter computes for the same bodies.
#include <gtest/gtest.h>

#include <random>

#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/reference/interpreter.h"

extern "C" {
void weft_aot_bias_gelu(void* const* buffers, int64_t row_begin, int64_t row_end);
void weft_aot_adam_f64(void* const* buffers, int64_t row_begin, int64_t row_end);
}

namespace weft {
namespace {

Graph body(const std::string& path) {
  StatusOr<Graph> g = read_graph_file(path);
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  InferTypesPass infer;
  EXPECT_TRUE(infer.run(*g).ok());
  return std::move(*g);
}

void check(const std::string& path, void (*fn)(void* const*, int64_t, int64_t), int64_t rows,
           double tol) {
  Graph g = body(path);
  std::mt19937_64 rng(1);
  std::vector<Tensor> inputs;
  std::vector<void*> buffers;
  for (const Input& in : g.inputs()) {
    Tensor t(g.type(in.value));
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.set_double(i, std::uniform_real_distribution<double>(-3, 3)(rng));
    }
    inputs.push_back(std::move(t));
  }
  for (Tensor& t : inputs) buffers.push_back(t.raw_data());
  Tensor out(g.type(g.outputs()[0]));
  buffers.push_back(out.raw_data());
  fn(buffers.data(), 0, rows / 2);  // in two calls, as the runtime splits rows
  fn(buffers.data(), rows / 2, rows);
  auto ref = reference::run(g, inputs);
  ASSERT_TRUE(ref.ok()) << ref.error().to_string();
  std::string why;
  EXPECT_TRUE(all_close(out, ref->outputs[0], tol, &why)) << path << ": " << why;
}

TEST(KernelObject, F32KernelMatchesTheReference) {
  check("tests/aot/testdata/bias_gelu.wir", weft_aot_bias_gelu, /*rows=*/37, 1e-6);
}

TEST(KernelObject, F64KernelWithLibmCallsMatchesTheReference) {
  check("tests/aot/testdata/adam_f64.wir", weft_aot_adam_f64, /*rows=*/1, 1e-14);
}

}  // namespace
}  // namespace weft
