#pragma once
// Test helper: runs one op through a CPU library kernel and through the reference
// interpreter on the same inputs, and compares the results (STYLE.md: every backend is
// compared against the reference interpreter op by op).
//
//   Tensor x = random_tensor({DType::f32, {8, 5}}, /*seed=*/1);
//   EXPECT_TRUE(matches_reference(Op::Sum, {{"axes", IntList{1}}}, {x}, 1e-5));

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_rules.h"
#include "runtime/cpu/kernel.h"
#include "runtime/reference/interpreter.h"
#include "runtime/tensor.h"

namespace weft::cpu::testing {

/// Uniform values in [lo, hi) for float dtypes; integers in [lo, hi) otherwise; bools
/// 0/1. Deterministic for a seed.
inline Tensor random_tensor(const Type& type, unsigned seed, double lo = -1.0,
                            double hi = 1.0) {
  std::mt19937_64 rng(seed);
  Tensor t(type);
  const bool integral = !is_floating(type.dtype);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = u(rng);
    if (type.dtype == DType::boolean) v = v > (lo + hi) / 2 ? 1 : 0;
    else if (integral) v = std::floor(v);
    t.set_double(i, v);
  }
  return t;
}

/// The outcome of running one op on both backends.
struct Comparison {
  bool has_kernel = false;   ///< make_library_kernel gave a kernel (not nullptr).
  Status cpu_status;         ///< Binding or running the CPU kernel.
  Status reference_status;   ///< Running the reference interpreter.
  Tensor cpu;
  Tensor reference;
};

/// Runs `op {attrs}` on `inputs` with both backends (the result type comes from the
/// shape rule; a shape-rule error is returned as reference_status).
inline Comparison run_both(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs,
                           int threads = 2) {
  Comparison c;
  Graph g("op");
  std::vector<ValueId> operands;
  for (size_t i = 0; i < inputs.size(); ++i) {
    operands.push_back(g.add_input("in" + std::to_string(i), inputs[i].type()));
  }
  StatusOr<ValueId> r = add_typed_node(g, op, operands, attrs, Location{});
  if (!r.ok()) {
    c.reference_status = r.error();
    return c;
  }
  g.add_output(*r);
  const Type result_type = g.type(*r);
  StatusOr<reference::RunResult> ref = reference::run(g, inputs);
  if (ref.ok()) c.reference = ref->outputs[0];
  else c.reference_status = ref.error();

  LibraryCall call;
  call.node = g.nodes().back();
  for (const Tensor& t : inputs) call.operand_types.push_back(t.type());
  call.result_type = result_type;
  std::vector<const void*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(t.raw_data());
  c.cpu = Tensor(result_type);
  auto kernel = make_library_kernel(call, ptrs, c.cpu.raw_data());
  if (!kernel.ok()) {
    c.cpu_status = kernel.error();
    return c;
  }
  c.has_kernel = *kernel != nullptr;
  if (!c.has_kernel) return c;
  ThreadPool pool(threads);
  c.cpu_status = (*kernel)->run(pool);
  return c;
}

/// True when the CPU kernel exists, both backends succeed and the results agree within
/// `tol` (all_close); otherwise false, with the reason in `why`.
inline bool matches_reference(Op op, const Attrs& attrs, const std::vector<Tensor>& inputs,
                              double tol, std::string* why = nullptr, int threads = 2) {
  Comparison c = run_both(op, attrs, inputs, threads);
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  if (!c.reference_status.ok()) return fail("reference: " + c.reference_status.to_string());
  if (!c.has_kernel) return c.cpu_status.ok() ? fail("no CPU kernel") : fail(c.cpu_status.to_string());
  if (!c.cpu_status.ok()) return fail("cpu: " + c.cpu_status.to_string());
  return all_close(c.cpu, c.reference, tol, why);
}

}  // namespace weft::cpu::testing
