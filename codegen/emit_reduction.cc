// Emits the MLIR text of a reduction kernel body (an elementwise chain ending in sum,
// mean, max or min); see emit_elementwise.h for the ABI and the row layouts.

#include <cmath>
#include <string>
#include <vector>

#include "codegen/emit_elementwise.h"
#include "codegen/emitter.h"

namespace weft::codegen {
namespace emit_detail {

// acc ⊕ x: sums in f64 (f32 lanes widened); max/min take x when it is larger (smaller)
// or NaN, and keep a NaN accumulator, as the reference does.
std::string Emitter::accumulate(const Node& red, const std::string& acc, const std::string& x, int w) {
  const DType d = g_.type(red.result()).dtype;
  if (red.op == Op::Sum || red.op == Op::Mean) {
    const std::string x64 = d == DType::f64 ? x : conv("arith.extf", x, d, DType::f64, w);
    return bi("arith.addf", acc, x64, vec("f64", w));
  }
  const std::string better = cmp(d, red.op == Op::Max ? "ogt" : "olt", x, acc, w);
  const std::string take = bi("arith.ori", better, cmp(d, "uno", x, x, w), vec("i1", w));
  return sel(take, x, acc, d, w);
}

// The accumulation of one row: a loop over the reduced index `o` (the dims in `list`);
// inside it, for the row layout, a vector loop and a scalar tail along the innermost
// dim; for the column layout, one `w`-wide access at column `col`. Returns the final
// accumulator: a scalar (row layout) or a vector<w> (column layout).
std::string Emitter::reduce_rows(const Node& red, const ReductionSpace& rs,
                                 const std::vector<std::string>& ptr,
                                 const std::vector<std::string>& row_off,
                                 const std::vector<int>& list, const std::string& col, int w) {
  const DType d = g_.type(red.result()).dtype;
  const bool sum = red.op == Op::Sum || red.op == Op::Mean;
  const DType acc_d = sum ? DType::f64 : d;
  const double init = sum ? 0.0 : red.op == Op::Max ? -INFINITY : INFINITY;
  const ValueId x = red.operands[0];
  int64_t outer = 1;
  for (int j : list) outer *= space_.dims[j];
  const std::string c0 = cst(DType::i64, 0, 1), c1 = cst(DType::i64, 1, 1);
  const std::string co = cst(DType::i64, static_cast<double>(outer), 1);
  std::vector<std::string> bases, splats;
  if (rs.column()) {
    const std::string t = vec(compute_elem(acc_d), w);
    const std::string init_v = cst(acc_d, init, w);
    const std::string res = "%t" + std::to_string(next_++), o = "%o" + std::to_string(next_++),
                      a = "%a" + std::to_string(next_++);
    if (column_groups_) {  // warp g takes rows g, g + 8, ... of the column
      for_header(res, o, group_id_, co, cst(DType::i64, lanes_ / kWarp, 1), {a}, {init_v}, {t});
    } else {
      for_header(res, o, c0, co, c1, {a}, {init_v}, {t});
    }
    operand_bases(ptr, row_off, o, list, bases, splats);
    close_loop({accumulate(red, a, compute(w, col, bases, splats, &red).at(x), w)}, {t});
    return column_groups_ ? group_combine(red, res, acc_d) : res;
  }
  const int64_t length = space_.dims.back(), main = length / w * w;
  const std::string vt = vec(compute_elem(acc_d), w), st = compute_elem(acc_d);
  const std::string res = "%t" + std::to_string(next_++), o = "%o" + std::to_string(next_++),
                    va = "%a" + std::to_string(next_++), sa = "%a" + std::to_string(next_++);
  for_header(res + ":2", o, c0, co, c1, {va, sa}, {cst(acc_d, init, w), cst(acc_d, init, 1)}, {vt, st});
  operand_bases(ptr, row_off, o, list, bases, splats);
  std::string v = va, s = sa;
  auto inner = [&](int64_t from, int64_t to, int step, const std::string& acc, const std::string& t) {
    const std::string r = "%t" + std::to_string(next_++), i = "%i" + std::to_string(next_++),
                      a = "%a" + std::to_string(next_++);
    // In warp-row mode lane l takes the `step` elements from + l·step, then those
    // lanes·step further, ...
    std::string lo = cst(DType::i64, static_cast<double>(from), 1);
    if (lanes_ > 1) lo = lane_start(lo, step);
    // The step's constant before the bound's: the order the emitted text has always had.
    const std::string lanes_step = cst(DType::i64, static_cast<double>(step) * lanes_, 1);
    const std::string hi = cst(DType::i64, static_cast<double>(to), 1);
    for_header(r, i, lo, hi, lanes_step, {a}, {acc}, {t});
    close_loop({accumulate(red, a, compute(step, i, bases, splats, &red).at(x), step)}, {t});
    return r;
  };
  if (main > 0) v = inner(0, main, w, va, vt);
  if (main < length) s = inner(main, length, 1, sa, st);
  close_loop({v, s}, {vt, st});
  // Horizontal: sums add the lanes (f64, so the order hardly matters); max/min fold
  // them into the scalar accumulator one by one.
  std::string total = res + "#1";
  if (sum) {
    total = bi("arith.addf", lanes_sum(res + "#0", vt, w), total, "f64");
  } else {
    for (int lane = 0; lane < w; ++lane) {
      total = accumulate(red, total, this->lane(res + "#0", lane, st, vt, w), 1);
    }
  }
  if (lanes_ > 1) total = warp_combine(red, total, acc_d);
  return total;
}

/// One reduction module's state (Emitter::reduction_module): the reduction, its layout
/// and buffers, and, with column groups, whether this lane's column exists.
struct Emitter::ReductionLoop {
  const Node& red;
  const ReductionSpace& rs;
  std::vector<std::string> ptr;    ///< The buffers' pointers: inputs, then the output.
  std::vector<int> kept, reduced;  ///< Dims other than the innermost, by kind.
  std::string valid_column;        ///< Column groups: this lane's column exists.
};

std::string Emitter::reduction_module(const std::string& symbol, const Node& red,
                                      const ReductionSpace& rs) {
  ReductionLoop rl{red, rs, {}, {}, {}, {}};
  header(rl.ptr, symbol);
  const int last = static_cast<int>(space_.dims.size()) - 1;
  for (int j = 0; j < last; ++j) (rs.reduced[j] ? rl.reduced : rl.kept).push_back(j);
  if (rs.rows() == 0) return footer();
  if (!gpu_code_ || width_ == 1 || rs.column()) {
    reduction_rows(rl, width_);
    return footer();
  }
  // GPU code along rows: the operands read along the row, width_ lanes at a time where
  // their addresses allow it.
  if_aligned(row_operands(rl.ptr), [&] { reduction_rows(rl, width_); }, [&] { reduction_rows(rl, 1); });
  return footer();
}

void Emitter::reduction_rows(ReductionLoop& rl, int w) {
  const ReductionSpace& rs = rl.rs;
  // Column groups: the loop walks blocks of 32 columns (column_group_row).
  const int64_t per_block = kWarp;
  open_rows("%r", column_groups_ ? (rs.rows() + per_block - 1) / per_block : rs.rows());
  const std::string r = column_groups_ ? column_group_row(rl) : "%r";
  if (!rs.column()) {  // Row r is output element r: its kept indices come from r.
    std::vector<std::string> row_off;
    for (size_t k = 0; k < g_.inputs().size(); ++k) row_off.push_back(offset(k, "%r", rl.kept));
    reduction_store(rl, reduce_rows(rl.red, rs, rl.ptr, row_off, rl.reduced, "", w), "%r", 1);
  } else {
    reduction_columns(rl, r);
  }
  indent_.resize(indent_.size() - 2);
  os_ << indent_ << "}\n";
}

std::string Emitter::column_group_row(ReductionLoop& rl) {
  // Lane l of warp g takes column 32·block + l (clamped to the last, and not stored, past
  // the end) and rows g, g + 8...
  const std::string warp_size = cst(DType::i64, kWarp, 1);
  group_id_ = bi("arith.divui", lane_id_, warp_size, "i64");
  const std::string raw = bi("arith.addi", bi("arith.muli", "%r", warp_size, "i64"),
                             bi("arith.remui", lane_id_, warp_size, "i64"), "i64");
  const std::string last = cst(DType::i64, static_cast<double>(rl.rs.rows() - 1), 1);
  rl.valid_column = bi("arith.cmpi ule,", raw, last, "i64");
  return sel(rl.valid_column, raw, last, DType::i64, 1);
}

void Emitter::reduction_columns(ReductionLoop& rl, const std::string& r) {
  // Row r = (kept index c, block b): blocks of w columns, then single columns.
  const int64_t length = space_.dims.back(), blocks = length / width_,
                per = blocks + length % width_;
  const std::string c_per = cst(DType::i64, static_cast<double>(per), 1);
  const std::string c = bi("arith.divui", r, c_per, "i64");
  const std::string b = bi("arith.remui", r, c_per, "i64");
  std::vector<std::string> row_off;
  for (size_t k = 0; k < g_.inputs().size(); ++k) row_off.push_back(offset(k, c, rl.kept));
  const std::string out_row = bi("arith.muli", c, cst(DType::i64, static_cast<double>(length), 1), "i64");
  if (blocks > 0 && length % width_ > 0) {
    const std::string is_block =
        bi("arith.cmpi ult,", b, cst(DType::i64, static_cast<double>(blocks), 1), "i64");
    if_else(is_block, [&] { reduction_column(rl, row_off, out_row, b, blocks, width_); },
            [&] { reduction_column(rl, row_off, out_row, b, blocks, 1); });
  } else {
    reduction_column(rl, row_off, out_row, b, blocks, blocks > 0 ? width_ : 1);
  }
}

void Emitter::reduction_column(ReductionLoop& rl, const std::vector<std::string>& row_off,
                               const std::string& out_row, const std::string& b, int64_t blocks,
                               int w) {
  std::string col;
  if (w > 1) {
    col = bi("arith.muli", b, cst(DType::i64, w, 1), "i64");
  } else {
    col = bi("arith.addi", b, cst(DType::i64, static_cast<double>(blocks * width_ - blocks), 1), "i64");
  }
  // Along the innermost dim every operand's stride is 0 or 1: offset by the column.
  std::vector<std::string> off = row_off;
  for (size_t k = 0; k < off.size(); ++k) {
    if (space_.strides[k].back() == 0) continue;
    off[k] = off[k].empty() ? col : bi("arith.addi", off[k], col, "i64");
  }
  const std::string zero = cst(DType::i64, 0, 1);
  reduction_store(rl, reduce_rows(rl.red, rl.rs, rl.ptr, off, rl.reduced, zero, w),
                  bi("arith.addi", out_row, col, "i64"), w);
}

void Emitter::reduction_store(ReductionLoop& rl, std::string acc, const std::string& index, int w) {
  const Node& red = rl.red;
  const DType d = g_.type(red.result()).dtype;
  if (red.op == Op::Sum || red.op == Op::Mean) {
    if (red.op == Op::Mean) {
      acc = bi("arith.divf", acc, cst(DType::f64, static_cast<double>(rl.rs.reduced_size()), w),
               vec("f64", w));
    }
    if (d != DType::f64) acc = conv("arith.truncf", acc, DType::f64, d, w);
  }
  // f16/bf16: accumulated in f64 (sums) or f32 (max/min) over the widened inputs,
  // rounded to f32 and then once to the dtype at the end, as the reference rounds its
  // f32 kernel's result.
  if (is_half(d)) acc = f32_to_half(acc, d, /*round=*/true, w);
  const std::string address = gep(rl.ptr[g_.inputs().size()], index, d);
  // Every lane holds the result: lane 0 stores it (a row's), or warp 0 for the columns
  // that exist (column groups).
  std::string guard;
  if (column_groups_) {
    guard = bi("arith.andi", rl.valid_column,
               bi("arith.cmpi eq,", group_id_, cst(DType::i64, 0, 1), "i64"), "i1");
  } else if (lanes_ > 1) {
    guard = bi("arith.cmpi eq,", lane_id_, cst(DType::i64, 0, 1), "i64");
  }
  if (!guard.empty()) os_ << indent_ << "scf.if " << guard << " {\n";
  os_ << indent_ << (guard.empty() ? "" : "  ") << "llvm.store " << acc << ", " << address
      << " {alignment = " << dtype_size(d) << " : i64} : " << vec(memory_elem(d), w)
      << ", !llvm.ptr\n";
  if (!guard.empty()) os_ << indent_ << "}\n";
}

std::vector<std::pair<std::string, DType>> Emitter::row_operands(const std::vector<std::string>& ptr) const {
  std::vector<std::pair<std::string, DType>> operands;
  for (size_t k = 0; k < g_.inputs().size(); ++k) {
    if (space_.strides[k].back() != 0) operands.emplace_back(ptr[k], g_.type(g_.inputs()[k].value).dtype);
  }
  return operands;
}

void Emitter::if_aligned(const std::vector<std::pair<std::string, DType>>& buffers,
                         const std::function<void()>& vector, const std::function<void()>& scalar) {
  // The low bits of every address, or-ed: zero when each is a multiple of its vector's size.
  std::string low;
  for (const auto& [p, d] : buffers) {
    const std::string bits =
        bi("arith.andi", emit("llvm.ptrtoint " + p + " : !llvm.ptr to i64"),
           cst(DType::i64, static_cast<double>(access_align(d, width_) - 1), 1), "i64");
    low = low.empty() ? bits : bi("arith.ori", low, bits, "i64");
  }
  const std::string ok =
      low.empty() ? cst(DType::boolean, 1, 1) : bi("arith.cmpi eq,", low, cst(DType::i64, 0, 1), "i64");
  if_else(ok, vector, scalar);
}

void Emitter::if_else(const std::string& cond, const std::function<void()>& then,
                      const std::function<void()>& otherwise) {
  os_ << indent_ << "scf.if " << cond << " {\n";
  indent_ += "  ";
  then();
  indent_.resize(indent_.size() - 2);
  os_ << indent_ << "} else {\n";
  indent_ += "  ";
  otherwise();
  indent_.resize(indent_.size() - 2);
  os_ << indent_ << "}\n";
}

}  // namespace emit_detail

using emit_detail::Emitter;

std::string emit_reduction(const Graph& body, const std::string& symbol, bool native_bf16) {
  const ReductionSpace rs = collapse_reduction_space(body, FusedKind::reduction);
  Emitter e(body, rs.space);
  e.set_native_bf16(native_bf16);
  return e.reduction_module(symbol, *body_reduction(body), rs);
}

}  // namespace weft::codegen
