#pragma once
// Test helpers shared by the kernel compiler's and the CPU backend's tests: graphs parsed
// with their types, one-node bodies, random inputs, and a run of a body through both the
// JIT and the reference interpreter.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "codegen/kernel_compiler.h"
#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"

namespace weft::codegen::testing {

/// `text` parsed as the IR file `file`, with every value's type inferred.
inline Graph parse_typed(const std::string& text, const std::string& file = "test.wir") {
  StatusOr<Graph> g = parse_graph(text, file);
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  if (!g.ok()) return Graph();
  InferTypesPass infer;
  StatusOr<bool> typed = infer.run(*g);
  EXPECT_TRUE(typed.ok()) << typed.error().to_string();
  return std::move(*g);
}

/// A body applying `op` once to inputs of `operand_types`; the result has the
/// broadcast shape of the operands and dtype `result` (default: the first operand's).
inline Graph op_body(Op op, const std::vector<Type>& operand_types, Attrs attrs = {},
                     std::optional<DType> result = std::nullopt) {
  Graph g("k");
  std::vector<ValueId> in;
  Shape shape = operand_types[0].shape;
  for (size_t i = 0; i < operand_types.size(); ++i) {
    in.push_back(g.add_input("x" + std::to_string(i), operand_types[i]));
    shape = *broadcast_shapes(shape, operand_types[i].shape);
  }
  const DType d = result.value_or(operand_types.back().dtype);
  g.add_output(g.add_node(op, in, std::move(attrs), {}, Type{d, shape}));
  return g;
}

/// Uniform random values in [lo, hi] (integers rounded; bool 0/1).
inline Tensor random_tensor(const Type& type, std::mt19937_64& rng, double lo, double hi) {
  Tensor t(type);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = u(rng);
    if (type.dtype == DType::boolean) v = v > (lo + hi) / 2;
    else if (!is_floating(type.dtype)) v = std::round(v);
    t.set_double(i, v);
  }
  return t;
}

/// random_tensor for every input of `g`, in order.
inline std::vector<Tensor> random_inputs(const Graph& g, std::mt19937_64& rng, double lo,
                                         double hi) {
  std::vector<Tensor> inputs;
  for (const Input& in : g.inputs()) inputs.push_back(random_tensor(g.type(in.value), rng, lo, hi));
  return inputs;
}

/// The outputs of `body`'s compiled kernel `fn` over `rows` rows for `inputs`, rows
/// computed in two calls (so row_begin matters).
inline std::vector<Tensor> run_rows(GeneratedFn fn, int64_t rows, const Graph& body,
                                    std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs;
  std::vector<void*> buffers;
  for (Tensor& t : inputs) buffers.push_back(t.raw_data());
  for (ValueId v : body.outputs()) outputs.emplace_back(body.type(v));
  for (Tensor& t : outputs) buffers.push_back(t.raw_data());
  fn(buffers.data(), 0, rows / 2);
  fn(buffers.data(), rows / 2, rows);
  return outputs;
}

/// The JIT's outputs for `inputs` (run_rows).
inline std::vector<Tensor> run_kernel(const Graph& body, std::vector<Tensor>& inputs) {
  StatusOr<const CompiledKernel*> k = KernelCompiler::global().compile(body);
  EXPECT_TRUE(k.ok()) << k.error().to_string();
  if (!k.ok()) return {};
  return run_rows((*k)->fn, (*k)->rows, body, inputs);
}

/// Largest |jit - reference| / max(1, |reference|) over the elements (absolute error
/// below 1, relative above; NaN where exactly one side is NaN).
inline double max_scaled_error(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get_double(i), y = b.get_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return NAN;
    } else if (x != y) {
      worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(y)));
    }
  }
  return worst;
}

/// Runs `body` on `inputs` through the JIT and the reference interpreter; `check(got,
/// want)` expects one output close enough and returns its distance. Returns the largest.
template <typename Check>
double compare_with_reference(const Graph& body, std::vector<Tensor> inputs, Check check) {
  std::vector<Tensor> got = run_kernel(body, inputs);
  StatusOr<reference::RunResult> want = reference::run(body, inputs);
  EXPECT_TRUE(want.ok()) << want.error().to_string();
  if (!want.ok() || got.size() != want->outputs.size()) return NAN;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i) + "\n" + kernel_key(body));
    worst = std::max(worst, check(got[i], want->outputs[i]));
  }
  return worst;
}

/// Runs `body` on `inputs` through the JIT and the reference interpreter and expects
/// every output within `tol` (all_close: |a-b| <= tol + tol·|b|). Returns the largest
/// scaled error seen (max_scaled_error).
inline double expect_matches_reference(const Graph& body, std::vector<Tensor> inputs,
                                       double tol) {
  return compare_with_reference(body, std::move(inputs), [&](const Tensor& got, const Tensor& want) {
    std::string why;
    EXPECT_TRUE(all_close(got, want, tol, &why)) << why;
    return max_scaled_error(got, want);
  });
}

/// Random inputs for `body` in [lo, hi] (u8 in [max(lo, 0), hi]) from `seed`.
inline std::vector<Tensor> random_body_inputs(const Graph& body, double lo, double hi,
                                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> inputs;
  for (const Input& in : body.inputs()) {
    const DType d = body.type(in.value).dtype;
    const double l = d == DType::u8 ? std::max(lo, 0.0) : lo;
    inputs.push_back(random_tensor(body.type(in.value), rng, l, hi));
  }
  return inputs;
}

/// expect_matches_reference with random inputs in [lo, hi].
inline double expect_random_matches(const Graph& body, double tol, double lo = -3,
                                    double hi = 3, uint64_t seed = 42) {
  return expect_matches_reference(body, random_body_inputs(body, lo, hi, seed), tol);
}

/// The largest distance between `a` and `b` (f16 or bf16, or any other dtype compared
/// exactly) in units in the last place of `b`'s value in that dtype: 0 when they are
/// equal (NaN equals NaN, whatever the payload), infinity when exactly one is NaN or
/// they differ in a dtype that is not f16/bf16.
inline double max_half_ulps(const Tensor& a, const Tensor& b) {
  const DType d = b.dtype();
  const bool half = is_half(d);
  const int mantissa = d == DType::f16 ? 10 : 7, min_exp = d == DType::f16 ? -14 : -126;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get_double(i), y = b.get_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return INFINITY;
    } else if (x != y) {
      if (!half || std::isinf(x) || std::isinf(y)) return INFINITY;
      const int e = y == 0 ? min_exp : std::max(min_exp, std::ilogb(y));
      worst = std::max(worst, std::abs(x - y) / std::ldexp(1.0, e - mantissa));
    }
  }
  return worst;
}

/// Runs `body` on `inputs` through the JIT and the reference interpreter and expects
/// every output within `ulps` of the reference (max_half_ulps; 0: bit for bit up to NaN
/// payloads). Returns the largest distance seen.
inline double expect_half_matches_reference(const Graph& body, std::vector<Tensor> inputs,
                                            double ulps) {
  return compare_with_reference(body, std::move(inputs), [&](const Tensor& got, const Tensor& want) {
    const double d = max_half_ulps(got, want);
    EXPECT_LE(d, ulps);
    return d;
  });
}

/// expect_half_matches_reference with random inputs in [lo, hi].
inline double expect_random_half_matches(const Graph& body, double ulps, double lo = -3,
                                         double hi = 3, uint64_t seed = 42) {
  return expect_half_matches_reference(body, random_body_inputs(body, lo, hi, seed), ulps);
}

}  // namespace weft::codegen::testing
