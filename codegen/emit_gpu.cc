// Emits the MLIR text of a CUDA elementwise kernel; see emit_gpu.h. The row and column
// of each element, the operand addresses and the op sequence are the CPU emitter's
// (emitter.h), at vector width 1.

#include "codegen/emit_gpu.h"

#include "codegen/emit_elementwise.h"
#include "codegen/emitter.h"

namespace weft::codegen {
namespace emit_detail {

// With gpu_ false (emit_host_scalar_kernel) the same code with the CPU's ABI, a "row"
// being one element.
std::string Emitter::gpu_module(const std::string& symbol) {
  std::vector<std::string> ptr;
  header(ptr, symbol);
  const int64_t length = space_.row_length(), total = space_.rows() * length;
  if (total != 0) {
    // One thread per element: its row and column, then the CPU's row addressing.
    open_rows("%e", total);
    const std::string length_c = cst(DType::i64, static_cast<double>(length), 1);
    const std::string row = bi("arith.divui", "%e", length_c, "i64");
    const std::string column = bi("arith.remui", "%e", length_c, "i64");
    std::vector<std::string> bases, splats, outs;
    row_pointers(ptr, row, bases, splats, outs);
    body(/*w=*/1, column, bases, splats, outs);
    indent_.resize(indent_.size() - 2);
    os_ << indent_ << "}\n";
  }
  return footer();
}

}  // namespace emit_detail

bool gpu_supports(const Graph& g, const Node& node) {
  if (!emit_supports(g, node)) return false;
  if (node.info().category == OpCategory::Reduction) {  // sum, mean, max, min
    return !generated_reduction_gap(g.type(node.result()).dtype, CodeTarget::gpu);
  }
  if (node.info().category != OpCategory::Elementwise) return false;
  return !elementwise_gap(g, node, CodeTarget::gpu).has_value();
}

namespace {

GpuKernel emit_scalar_kernel(const Graph& body, FusedKind kind, const std::string& symbol,
                             bool gpu) {
  const bool row = kind == FusedKind::row;
  if (row || kind == FusedKind::reduction) {
    // One thread per row: the CPU's row code at width 1, so the column layout's blocks
    // are single columns and every row computes one output element (or one row of a
    // row body).
    ReductionSpace rs = collapse_reduction_space(body, kind);
    rs.width = 1;
    emit_detail::Emitter e(body, rs.space, gpu, /*scalar=*/true);
    // Row bodies and reductions along the innermost dim with rows of a warp's width or
    // more: one warp per row (its lanes stride the row, shuffles combine the
    // statistics), so loads coalesce and long rows are split 32 ways. Shorter rows, and
    // column reductions (whose threads already read consecutive columns), keep one
    // thread per row or output.
    // Fewer rows than would fill the GPU with one warp each (under 2048 rows: 64K
    // threads), of 256 elements or more (batch-norm statistics: a channel's N·H·W; a
    // small batch's rows), take a whole block per row.
    using emit_detail::Emitter;
    bool slots_ok = true;  // shared-memory slots hold f32 (f16, bf16 computed in it), f64, i32, i64
    for (const Node& n : body.nodes()) {
      const DType d = body.type(n.result()).dtype;
      if (n.info().category == OpCategory::Reduction && !is_floating(d) && d != DType::i32 &&
          d != DType::i64) {
        slots_ok = false;
      }
    }
    if (gpu && slots_ok && !row && rs.column() && rs.reduced_size() >= 64) {
      // Column reductions (a bias gradient's sum over the batch) over 64 rows or more:
      // blocks of 32 columns, the rows split over the block's 8 warps.
      e.set_column_groups();
      std::string mlir = e.reduction_module(symbol, *body_reduction(body), rs);
      return {std::move(mlir), (rs.rows() + Emitter::kWarp - 1) / Emitter::kWarp * Emitter::kBlock};
    }
    int lanes = 1;
    if (gpu && (row || !rs.column()) && !rs.space.dims.empty() &&
        rs.space.dims.back() >= Emitter::kWarp) {
      lanes = Emitter::kWarp;
      if (slots_ok && rs.space.dims.back() >= Emitter::kBlock && rs.rows() < 2048) {
        lanes = Emitter::kBlock;
      }
    }
    e.set_row_lanes(lanes);
    std::string mlir = row ? e.row_module(symbol, rs)
                           : e.reduction_module(symbol, *body_reduction(body), rs);
    return {std::move(mlir), rs.rows() * lanes};
  }
  const CollapsedSpace space = collapse_space(body);
  return {emit_detail::Emitter(body, space, gpu, /*scalar=*/true).gpu_module(symbol),
          space.rows() * space.row_length()};
}

}  // namespace

GpuKernel emit_gpu_kernel(const Graph& body, FusedKind kind, const std::string& symbol) {
  return emit_scalar_kernel(body, kind, symbol, /*gpu=*/true);
}

GpuKernel emit_gpu_kernel(const Graph& body, const std::string& symbol) {
  return emit_gpu_kernel(body, standalone_kind(body), symbol);
}

GpuKernel emit_host_scalar_kernel(const Graph& body, const std::string& symbol) {
  return emit_scalar_kernel(body, standalone_kind(body), symbol, /*gpu=*/false);
}

std::string emit_gpu_elementwise(const Graph& body, const std::string& symbol) {
  return emit_gpu_kernel(body, symbol).mlir;
}

}  // namespace weft::codegen
