// Emits the MLIR text of a CUDA kernel; see emit_gpu.h. The row and column of each
// element, the operand addresses and the op sequence are the CPU emitter's (emitter.h);
// the vector width is decided here, once per kernel (gpu_vector_width).

#include "codegen/emit_gpu.h"

#include <algorithm>

#include "codegen/emit_elementwise.h"
#include "codegen/emitter.h"
#include "runtime/ab_switch.h"

namespace weft::codegen {
namespace emit_detail {

// With gpu_ false (emit_host_scalar_kernel) the same code with the CPU's ABI, a "row"
// being one thread.
std::string Emitter::gpu_module(const std::string& symbol) {
  std::vector<std::string> ptr;
  header(ptr, symbol);
  if (space_.rows() * space_.row_length() != 0) {
    if (width_ == 1) {
      gpu_elements(ptr);
    } else {
      // Every operand read along the row and every result moves width_ elements per access.
      const size_t n_in = g_.inputs().size();
      std::vector<std::pair<std::string, DType>> vectors = row_operands(ptr);
      for (size_t o = 0; o < g_.outputs().size(); ++o) {
        vectors.emplace_back(ptr[n_in + o], g_.type(g_.outputs()[o]).dtype);
      }
      if_aligned(vectors, [&] { gpu_vector_units(ptr); }, [&] { gpu_elements(ptr); });
    }
  }
  return footer();
}

void Emitter::gpu_elements(const std::vector<std::string>& ptr) {
  // One thread per element: its row and column, then the CPU's row addressing.
  const int64_t length = space_.row_length(), total = space_.rows() * length;
  // The host's form of the vector kernel's fallback runs gpu_units() "threads" (rows of
  // the host ABI): each walks its elements with the GPU's grid stride.
  const bool host_stride = !gpu_ && gpu_units() < total;
  if (host_stride) {
    open_rows("%h", gpu_units());
    const std::string end = cst(DType::i64, static_cast<double>(total), 1);
    const std::string step = cst(DType::i64, static_cast<double>(gpu_units()), 1);
    os_ << indent_ << "scf.for %e = %h to " << end << " step " << step << " : i64 {\n";
    indent_ += "  ";
  } else {
    open_rows("%e", total);
  }
  const std::string length_c = cst(DType::i64, static_cast<double>(length), 1);
  const std::string row = bi("arith.divui", "%e", length_c, "i64");
  const std::string column = bi("arith.remui", "%e", length_c, "i64");
  std::vector<std::string> bases, splats, outs;
  row_pointers(ptr, row, bases, splats, outs);
  body(/*w=*/1, column, bases, splats, outs);
  for (int loops = host_stride ? 2 : 1; loops > 0; --loops) {
    indent_.resize(indent_.size() - 2);
    os_ << indent_ << "}\n";
  }
}

int64_t Emitter::gpu_units() const {
  const int64_t length = space_.row_length();
  return space_.rows() * (width_ == 1 ? length : std::max(length / width_, length % width_));
}

void Emitter::gpu_vector_units(const std::vector<std::string>& ptr) {
  const int64_t length = space_.row_length(), groups = length / width_, tail = length % width_;
  const int64_t units = gpu_units();
  open_rows("%u", units);
  // `per_row` units of `w` elements in each row, the first at column `first`: unit u is
  // row u / per_row, columns first + (u % per_row)·w ... + w - 1.
  auto units_of = [&](int64_t per_row, int64_t first, int w) {
    const bool guarded = space_.rows() * per_row < units;
    if (guarded) {
      const std::string count = cst(DType::i64, static_cast<double>(space_.rows() * per_row), 1);
      const std::string in_range = bi("arith.cmpi ult,", "%u", count, "i64");
      os_ << indent_ << "scf.if " << in_range << " {\n";
      indent_ += "  ";
    }
    const std::string per = cst(DType::i64, static_cast<double>(per_row), 1);
    const std::string row = bi("arith.divui", "%u", per, "i64");
    std::string column = bi("arith.remui", "%u", per, "i64");
    if (w > 1) column = bi("arith.muli", column, cst(DType::i64, w, 1), "i64");
    if (first > 0) column = bi("arith.addi", column, cst(DType::i64, static_cast<double>(first), 1), "i64");
    std::vector<std::string> bases, splats, outs;
    row_pointers(ptr, row, bases, splats, outs);
    body(w, column, bases, splats, outs);
    if (guarded) {
      indent_.resize(indent_.size() - 2);
      os_ << indent_ << "}\n";
    }
  };
  if (groups > 0) units_of(groups, 0, width_);
  if (tail > 0) units_of(tail, groups * width_, 1);
  indent_.resize(indent_.size() - 2);
  os_ << indent_ << "}\n";
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

bool gpu_vectors_enabled() { return !switched_off("WEFT_GPU_VECTOR"); }

namespace {

// The elements per vector access of a GPU kernel over `space` whose `lanes` threads share
// a row: 16 bytes of its widest dtype read or stored along the row (4 f32, 8 f16/bf16, 2
// f64; 8 at most), halved until every row of every such operand and `stored` result
// starts on a multiple of it (strides and window offsets; a row-major result's row
// length) and each lane gets a vector; 1 (scalar code) when none fits. The addresses
// themselves are checked when the kernel runs (Emitter::if_aligned).
int gpu_vector_width(const Graph& body, const CollapsedSpace& space, const std::vector<size_t>& stored,
                     int64_t lanes) {
  // The operands read along the row (the others are splats or per-row scalars) and the
  // results stored element by element.
  std::vector<size_t> loaded;
  size_t widest = 0;
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    if (space.strides[k].back() == 0) continue;
    loaded.push_back(k);
    widest = std::max(widest, dtype_size(body.type(body.inputs()[k].value).dtype));
  }
  for (size_t o : stored) widest = std::max(widest, dtype_size(body.type(body.outputs()[o]).dtype));
  if (widest == 0) return 1;
  const int64_t length = space.row_length();
  const size_t outer = space.dims.size() - 1;
  auto multiples = [&](const std::vector<int64_t>& strides, int64_t start, int w) {
    if (start % w != 0) return false;
    for (size_t j = 0; j < outer; ++j) {
      if (strides[j] % w != 0) return false;
    }
    return true;
  };
  for (int w = static_cast<int>(std::min<size_t>(8, 16 / widest)); w >= 2; w /= 2) {
    // Each of the row's lanes gets at least one vector.
    if (length < w * lanes) continue;
    bool aligned = true;
    for (size_t k : loaded) {
      const int64_t start = k < space.offsets.size() ? space.offsets[k] : 0;
      aligned = aligned && multiples(space.strides[k], start, w);
    }
    for (size_t o : stored) {
      if (o < space.out_strides.size() && !space.out_strides[o].empty()) {  // a store window
        aligned = aligned && multiples(space.out_strides[o], space.out_offsets[o], w);
      } else {  // row-major: row r starts at r · length
        aligned = aligned && (space.rows() == 1 || length % w == 0);
      }
    }
    if (aligned) return w;
  }
  return 1;
}

GpuKernel emit_kernel(const Graph& body, FusedKind kind, const std::string& symbol, bool gpu,
                      bool vectorize) {
  const bool row = kind == FusedKind::row;
  if (row || kind == FusedKind::reduction) {
    // One thread per row: the CPU's row code, with the GPU's vector width, so the column
    // layout's blocks are single columns and every row computes one output element (or
    // one row of a row body).
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
      return {std::move(mlir), (rs.rows() + Emitter::kWarp - 1) / Emitter::kWarp * Emitter::kBlock, 1};
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
    // Along rows, each lane reads `width` contiguous elements per load (columns keep one
    // element per thread: their threads already read adjacent columns). A row body
    // stores its full-shape results (those with the row's elements) the same way.
    int width = 1;
    if (vectorize && (row || !rs.column())) {
      std::vector<size_t> stored;
      int64_t elements = 1;
      for (int64_t d : rs.space.dims) elements *= d;
      for (size_t o = 0; row && o < body.outputs().size(); ++o) {
        if (body.type(body.outputs()[o]).shape.numel() == elements) stored.push_back(o);
      }
      width = gpu_vector_width(body, rs.space, stored, lanes);
    }
    e.set_gpu_width(width);
    std::string mlir = row ? e.row_module(symbol, rs)
                           : e.reduction_module(symbol, *body_reduction(body), rs);
    return {std::move(mlir), rs.rows() * lanes, width};
  }
  const CollapsedSpace space = collapse_space(body);
  emit_detail::Emitter e(body, space, gpu, /*scalar=*/true);
  std::vector<size_t> stored(body.outputs().size());
  for (size_t o = 0; o < stored.size(); ++o) stored[o] = o;
  const int width = vectorize ? gpu_vector_width(body, space, stored, /*lanes=*/1) : 1;
  e.set_gpu_width(width);
  std::string mlir = e.gpu_module(symbol);
  return {std::move(mlir), e.gpu_units(), width};
}

}  // namespace

GpuKernel emit_gpu_kernel(const Graph& body, FusedKind kind, const std::string& symbol,
                          bool vectorize) {
  return emit_kernel(body, kind, symbol, /*gpu=*/true, vectorize);
}

GpuKernel emit_gpu_kernel(const Graph& body, const std::string& symbol, bool vectorize) {
  return emit_gpu_kernel(body, standalone_kind(body), symbol, vectorize);
}

GpuKernel emit_host_scalar_kernel(const Graph& body, const std::string& symbol, bool vectorize) {
  return emit_kernel(body, standalone_kind(body), symbol, /*gpu=*/false, vectorize);
}

std::string emit_gpu_elementwise(const Graph& body, const std::string& symbol) {
  return emit_gpu_kernel(body, symbol).mlir;
}

}  // namespace weft::codegen
