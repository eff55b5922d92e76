#pragma once
// Test helper: runs one op through a CPU library kernel and through the reference
// interpreter on the same inputs, and compares the results (STYLE.md: every backend is
// compared against the reference interpreter op by op).
//
//   Tensor x = random_tensor({DType::f32, {8, 5}}, /*seed=*/1);
//   EXPECT_TRUE(matches_reference(Op::Sum, {{"axes", IntList{1}}}, {x}, 1e-5));

#include <cmath>
#include <cstdint>
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
  std::optional<std::string_view> gap;  ///< cpu_library_gap for the call.
  std::string description;              ///< The kernel's describe(), when there is one.
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
  c.gap = cpu_library_gap(call);
  auto kernel = make_library_kernel(call, ptrs, c.cpu.raw_data());
  if (!kernel.ok()) {
    c.cpu_status = kernel.error();
    return c;
  }
  c.has_kernel = *kernel != nullptr;
  if (!c.has_kernel) return c;
  c.description = (*kernel)->describe();
  ThreadPool pool(threads);
  c.cpu_status = (*kernel)->run(pool);
  return c;
}

/// The distance in units in the last place between two f16 or bf16 bit patterns (their
/// sign-magnitude order as integers).
inline int64_t half_ulps(uint16_t a, uint16_t b) {
  auto ordered = [](uint16_t x) -> int64_t { return x & 0x8000 ? -(x & 0x7fff) : x; };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

/// True when f16 or bf16 tensors `a` and `b` have one type and every element of `a` is
/// within `max_ulps` of `b`'s or within `abs_tol` of it (NaN matching NaN); otherwise
/// false, with the first offending element in `why`. `abs_tol` is for sums that cancel to
/// near zero, where the f32 summation order alone moves the result by more than its ulp.
inline bool within_ulps(const Tensor& a, const Tensor& b, int64_t max_ulps, double abs_tol,
                        std::string* why) {
  if (a.type() != b.type() || (a.dtype() != DType::f16 && a.dtype() != DType::bf16)) {
    *why = "types " + a.type().to_string() + " and " + b.type().to_string();
    return false;
  }
  const uint16_t* x = a.data<uint16_t>();
  const uint16_t* y = b.data<uint16_t>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (std::isnan(a.get_double(i)) && std::isnan(b.get_double(i))) continue;
    if (half_ulps(x[i], y[i]) > max_ulps && !(std::abs(a.get_double(i) - b.get_double(i)) <= abs_tol)) {
      *why = "element " + std::to_string(i) + ": " + std::to_string(a.get_double(i)) + " vs " +
             std::to_string(b.get_double(i)) + " (" + std::to_string(half_ulps(x[i], y[i])) +
             " ulps)";
      return false;
    }
  }
  return true;
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
