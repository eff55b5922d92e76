#pragma once
// The MLIR text of a fused elementwise kernel (kernel_compiler.h describes bodies and
// the ABI). Plain strings: no MLIR headers are needed to emit, only to compile
// (jit.h), so this file is cheap to build and its output is what `emit_mlir` shows.
//
// For `add(%x: f32[128,256], %b: f32[256])` the module reads, abridged:
//
//   func.func @k(%bufs: !llvm.ptr, %row_begin: i64, %row_end: i64) {
//     %p0 = llvm.load (gep %bufs[0]) ...              // operand and result pointers
//     scf.for %r = %row_begin to %row_end step %c1 : i64 {
//       %x_row = gep %p0[%r * 256]; %b_row = %p1 (offset 0 for every row)
//       scf.for %i = 0 to 256 step 16 : i64 {         // vector<16xf32> body
//         %x = llvm.load (gep %x_row[%i]) : vector<16xf32>
//         %y = arith.addf %x, %b : vector<16xf32>
//         llvm.store %y, (gep %out_row[%i])
//       }
//       scf.for %i = 256 to 256 step 1 : i64 { ... }  // scalar tail (left out when empty)
//     }
//   }

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_compiler.h"
#include "codegen/operand_layout.h"
#include "ir/graph.h"
#include "ir/kernel_space.h"
#include "ir/kernel_support.h"

namespace weft::codegen {

/// The iteration space of a reduction body: the reduction's *input* shape, collapsed
/// like an elementwise space but merging only dimensions of one kind (both reduced or
/// both kept). `reduced[j]` says whether dims[j] is reduced. The innermost dimension is
/// always present; when nothing is reduced a reduced dimension of size 1 is appended.
/// Two layouts follow from the innermost dimension (see `rows()`):
///  - reduced ("row"): one row per output element, reducing all reduced dims, the
///    innermost contiguously (sum(x, axes=[-1]), and [N,C,H,W] over 0,2,3 as C rows).
///  - kept ("column"): the innermost kept dim is cut into blocks of `width` outputs
///    (then one row per leftover column); a row reduces every reduced dim for its block.
/// Either way every output element is written by exactly one row.
struct ReductionSpace {
  CollapsedSpace space;
  std::vector<bool> reduced;  ///< [dim]
  int width = 16;             ///< Vector lanes (8 when the body has an 8-byte dtype).

  bool column() const { return !reduced.back(); }
  int64_t reduced_size() const;  ///< Elements reduced into each output element.
  int64_t rows() const;
  int64_t row_length() const;  ///< Elements a row reads (row: reduced_size; column: ·width).
};

/// The node whose result is the body's one output, when it is a reduction (sum, mean,
/// max, min) computed from elementwise nodes and the body's only reduction; nullptr
/// for an elementwise body and for a row body.
const Node* body_reduction(const Graph& body);

/// The body's first reduction node (in node order), or nullptr.
const Node* first_reduction(const Graph& body);

/// Collapses the iteration space of a body of form `kind`: a reduction body (its one
/// reduction, body_reduction) or a row body (the first reduction's input shape and axes:
/// every reduction of a row body has them); a row body's space is always of the "row"
/// layout. The kind is the fused node's (GeneratedKernel::kind), never re-derived here.
ReductionSpace collapse_reduction_space(const Graph& body, FusedKind kind);

/// The vector width of a body: 16 lanes, 8 when any value has an 8-byte dtype.
int body_width(const Graph& body);

/// True when the emitter implements `node`'s op on its operand and result dtypes: an
/// elementwise op, or sum/mean/max/min on f32 or f64 (the reduction of a body).
bool emit_supports(const Graph& g, const Node& node);

/// Why the code generated for `target` does not compute elementwise `node` on its
/// operand and result dtypes (ir/kernel_support.h, generated_code_gap), or nullopt.
std::optional<std::string_view> elementwise_gap(const Graph& g, const Node& node,
                                                CodeTarget target);

/// The MLIR module (func, arith, math, scf, vector and llvm dialects) defining
/// `symbol` with the GeneratedFn ABI. Every node must pass `emit_supports`, and every
/// output must have the shape of the first.
/// `native_bf16`: the target converts f32 → bf16 natively (Jit::native_bf16), which the
/// rounding to bf16 then takes where no lane is denormal (emit_half.cc).
std::string emit_elementwise(const Graph& body, const std::string& symbol, bool native_bf16 = false);

/// The MLIR module of a row body (is_row_body): per row, one pass over the row for
/// each level of reductions (a reduction whose input needs the per-row values of
/// earlier ones waits for their pass; several reductions of one level share a pass),
/// the per-row nodes computed once per row as scalars between passes, then a last pass
/// computing and storing the full-shape outputs; per-row outputs are stored at the end
/// of the row. Accumulation as in emit_reduction.
std::string emit_rows(const Graph& body, const std::string& symbol, bool native_bf16 = false);

/// The same for a reduction body (body_reduction is not null): the elementwise nodes
/// are computed per element of the reduction's input, then accumulated (float sums in
/// f64, max/min propagating NaN as runtime/reference/reduction.cc does).
std::string emit_reduction(const Graph& body, const std::string& symbol, bool native_bf16 = false);

}  // namespace weft::codegen
