#pragma once
// What one invocation of a Program costs, for the profiler's achieved GFLOP/s and GB/s
// (Executor::profile_report, `weftc profile`, `--profile`):
//
//   flops  matmul 2·M·N·K per batch; conv and its two backward ops 2·(output or input
//          gradient elements)·(the reduction length: C_in/groups·kh·kw, or the matching
//          one); a GEMM with an epilogue (a `contraction` invocation) the GEMM's flops
//          plus one per epilogue node per element of the product; a generated kernel one
//          flop per body node per element of its
//          iteration space (transcendentals count as one); a reduction one per input
//          element; movement, indexing, pooling, the composites (softmax, layer norm,
//          cross-entropy) and copies none (their GB/s is the figure that matters).
//   bytes  every operand read once and every result written once (a lower bound on
//          the traffic: what a kernel that never re-reads memory moves).

#include <cstdint>

#include "runtime/program.h"

namespace weft::cpu {

struct InvocationCost {
  double flops = 0;
  double bytes = 0;
};

InvocationCost invocation_cost(const Program& program, const Invocation& inv);

}  // namespace weft::cpu
