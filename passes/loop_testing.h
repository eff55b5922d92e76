#pragma once
// Test helpers for the passes that rewrite loops' precision (passes:autocast_loops_test,
// passes:rotate_carry_casts_test): a graph from IR text, its gradient, its values on
// the reference interpreter, and a step lowered for the cpu or for CUDA.
//
//   const Graph g = parse_typed(kText, "my_test.cc");
//   const std::vector<Tensor> grads = run_reference(gradient_of_floats(g), inputs);

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "autodiff/grad.h"
#include "codegen/cuda_program.h"
#include "codegen/lower.h"
#include "ir/text.h"
#include "passes/infer_types.h"
#include "runtime/reference/interpreter.h"

namespace weft {

/// `text` parsed (errors name `file`) and type-inferred; an internal error if it fails.
inline Graph parse_typed(const std::string& text, const char* file) {
  StatusOr<Graph> g = parse_graph(text, file);
  WEFT_CHECK(g.ok(), g.ok() ? "" : g.error().to_string());
  WEFT_CHECK(InferTypesPass().run(*g).ok(), "types");
  return std::move(*g);
}

/// The gradient of `g`'s output 0 w.r.t. each of its float inputs, in input order.
inline Graph gradient_of_floats(const Graph& g) {
  std::vector<std::string> wrt;
  for (const Input& in : g.inputs()) {
    if (is_floating(g.type(in.value).dtype)) wrt.push_back(g.value(in.value).name);
  }
  StatusOr<Graph> grad = gradient_graph(g, 0, wrt);
  WEFT_CHECK(grad.ok(), grad.ok() ? "" : grad.error().to_string());
  return std::move(*grad);
}

/// `g`'s outputs on the reference interpreter; none (and a test failure) if it fails.
inline std::vector<Tensor> run_reference(const Graph& g, const std::vector<Tensor>& inputs) {
  auto r = reference::run(g, inputs);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? r->outputs : std::vector<Tensor>{};
}

/// `g` lowered for the cpu, or for CUDA (codegen::cuda_lower_options(), no GPU needed).
inline StatusOr<codegen::Lowering> lower_for(const Graph& g, bool cuda) {
  return cuda ? codegen::lower_to_program(g, codegen::cuda_lower_options()) : codegen::lower_to_program(g);
}

}  // namespace weft
