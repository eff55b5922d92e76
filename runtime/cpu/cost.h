#pragma once
// What one invocation of a Program costs, for the profiler's achieved GFLOP/s and GB/s
// (Executor::profile_report, `weftc profile`, `--profile`):
//
//   flops  matmul 2·M·N·K per batch; conv 2·(output elements)·(C_in/groups·kh·kw), and
//          its two backward ops the same products (each forward product is used once by
//          each); a GEMM with an epilogue (a `contraction` invocation) the GEMM's flops
//          plus one per epilogue node per element of the product; a generated kernel one
//          flop per body node per element of its
//          iteration space (transcendentals count as one); a reduction one per input
//          element; movement, indexing, pooling, the composites (softmax, layer norm,
//          cross-entropy) and copies none (their GB/s is the figure that matters).
//   bytes  every operand read once and every result written once (a lower bound on
//          the traffic: what a kernel that never re-reads memory moves), at each
//          dtype's element size: two bytes for bf16 and f16. An f16 GEMM that runs via
//          f32 (converted) counts its f16 operands, not the conversion's traffic.
// The flops do not depend on the dtype; the profile names the dtype each GEMM and
// convolution multiplies in and sums their GFLOP/s per dtype (Executor::profile_report).

#include <cstdint>

#include "runtime/program.h"

namespace weft::cpu {

struct InvocationCost {
  double flops = 0;
  double bytes = 0;
};

InvocationCost invocation_cost(const Program& program, const Invocation& inv);

/// The flops of invocations [first, last) of `program` (0 where last <= first): e.g. the
/// compute that runs while a bucket's reduction is in flight, start_after + 1 to
/// wait_before (runtime/collective/bucket_plan.h), what can hide it.
double flops_between(const Program& program, size_t first, size_t last);

}  // namespace weft::cpu
