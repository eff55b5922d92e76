#pragma once
// A matmul's problem as the GEMM libraries see it, decided once for every backend
// (runtime/cpu's oneDNN plans and runtime/cuda's cuBLAS plans both start here): the
// operands as multiplied (op(a), op(b) after transpose_a / transpose_b), 1-D operands
// promoted as NumPy does, m, k, n, and the broadcast batch with each operand's entry per
// batch element.
//
//   // matmul(%a: f32[3,16,24], %b: f32[24,8])
//   StatusOr<std::optional<MatmulGeometry>> g = matmul_geometry(node, a, b);
//   // g->m 16, g->k 24, g->n 8, g->batch [3], g->a_entries {0,1,2}, g->b_entries {0,0,0}

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

struct MatmulGeometry {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, k = 0, n = 0;
  Shape batch;                        ///< The broadcast batch dimensions.
  std::vector<int64_t> a_entries;     ///< Per batch element: its A matrix's index in A.
  std::vector<int64_t> b_entries;     ///< Likewise for B.
};

/// The geometry of matmul `node` on operands of types `a` and `b`; nullopt where the GEMM
/// libraries do not run it (a dtype other than f32/f64, differing dtypes, a scalar
/// operand, a transposed 1-D operand). Errors, with the bare message each backend
/// prefixes with its own context: "contracted dimensions differ: A and B", "batch
/// dimensions of A and B do not broadcast".
StatusOr<std::optional<MatmulGeometry>> matmul_geometry(const Node& node, const Type& a,
                                                        const Type& b);

}  // namespace weft
