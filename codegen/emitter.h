#pragma once
// Internal to codegen/: the MLIR text emitter shared by emit_elementwise.cc (elementwise
// bodies), emit_reduction.cc (reduction bodies) and emit_rows.cc (row bodies). Plain strings, no MLIR headers.

#include <functional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen/emit_elementwise.h"

namespace weft::codegen::emit_detail {


inline bool is_signed_int(DType d) { return d == DType::i32 || d == DType::i64; }
/// f16 and bf16: stored as 16 bits, computed in f32 (see Emitter::load_value).
inline int bits(DType d) { return d == DType::boolean ? 1 : static_cast<int>(dtype_size(d)) * 8; }

/// The element type values of `d` are computed in (bool is i1, f16 and bf16 are f32)
/// and stored as (bool i8, f16 and bf16 their bits as i16).
inline std::string compute_elem(DType d) {
  switch (d) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "f32";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "i8";
    case DType::boolean: return "i1";
    default: return "<unsupported>";
  }
}
inline std::string memory_elem(DType d) {
  if (is_half(d)) return "i16";
  return d == DType::boolean ? "i8" : compute_elem(d);
}
inline std::string vec(const std::string& elem, int w) {
  return w == 1 ? elem : "vector<" + std::to_string(w) + "x" + elem + ">";
}

class Emitter {
 public:
  /// `gpu`: emit CUDA kernels (emit_gpu.h): width 1 unless set_gpu_width says otherwise,
  /// one pointer parameter per buffer, and a grid-stride loop over the rows instead of
  /// [row_begin, row_end). `scalar` alone: the GPU's code with the CPU's ABI (emit_gpu.h's
  /// emit_host_scalar_kernel, so tests run the GPU kernels' arithmetic on the host).
  Emitter(const Graph& g, const CollapsedSpace& space, bool gpu = false, bool scalar = false)
      : g_(g), space_(space), width_(gpu || scalar ? 1 : body_width(g)), gpu_(gpu),
        gpu_code_(gpu || scalar) {}

  /// GPU code (emit_gpu.cc): `w` elements per vector access, each vector load and store
  /// aligned to its whole size (w · element size, so the NVPTX back end emits one
  /// ld.global.v2/.v4 instead of w scalar loads); every module then checks at run time
  /// that its buffers are so aligned and otherwise runs the same code at width 1.
  void set_gpu_width(int w) { width_ = w; }

  /// CPU code for a target with a native f32 → bf16 conversion (Jit::native_bf16):
  /// f32_to_half rounds a vector with it unless a lane is denormal (emit_half.cc).
  void set_native_bf16(bool native) { native_bf16_ = native && !gpu_code_; }

  std::string module(const std::string& symbol);
  std::string reduction_module(const std::string& symbol, const Node& red, const ReductionSpace& rs);
  std::string row_module(const std::string& symbol, const ReductionSpace& rs);
  /// The CUDA form of module(): one thread per element (emit_gpu.cc; needs `gpu`).
  std::string gpu_module(const std::string& symbol);
  /// GPU row kernels and reductions along rows: `lanes` threads (kWarp: a warp; kBlock:
  /// a whole 256-thread block) share each row, each taking every lanes-th element, and
  /// combine their partial reductions — butterfly shuffles within a warp, then, for a
  /// block, the warps' results through shared memory in a fixed order — so every lane
  /// holds the row's statistics; lane 0 stores the per-row outputs. Launch `lanes`
  /// threads per row (runtime/cuda's blocks are kBlock threads).
  void set_row_lanes(int lanes) { lanes_ = lanes; }
  /// The GPU elementwise kernel's vector form (gpu_module with set_gpu_width): thread u
  /// takes vector unit u (width_ contiguous elements of one row) and tail element u (the
  /// rows' last length % width_ elements), so `units` threads cover the space.
  int64_t gpu_units() const;
  /// GPU column reductions (reduction_module, column layout): a 256-thread block takes 32
  /// adjacent output columns (one per lane, so loads coalesce) and splits the reduced rows
  /// 8 ways (one share per warp); shared memory adds the 8 partial results in order.
  /// Launch 256 threads per 32 outputs.
  void set_column_groups() {
    lanes_ = kBlock;
    column_groups_ = true;
  }
  static constexpr int kWarp = 32;
  static constexpr int kBlock = 256;

 private:
  std::string emit(const std::string& rhs) {
    std::string name = "%t" + std::to_string(next_++);
    os_ << indent_ << name << " = " << rhs << "\n";
    return name;
  }
  std::string cst(DType d, double v, int w);
  std::string un(const std::string& op, const std::string& x, const std::string& t) {
    return emit(op + " " + x + " : " + t);
  }
  std::string bi(const std::string& op, const std::string& x, const std::string& y,
                 const std::string& t) {
    return emit(op + " " + x + ", " + y + " : " + t);
  }
  std::string cmp(DType d, const std::string& pred, const std::string& x, const std::string& y,
                  int w) {
    return emit(std::string(is_floating(d) ? "arith.cmpf " : "arith.cmpi ") + pred + ", " + x +
                ", " + y + " : " + vec(compute_elem(d), w));
  }
  std::string sel(const std::string& c, const std::string& x, const std::string& y, DType d,
                  int w) {
    return emit("arith.select " + c + ", " + x + ", " + y + " : " +
                (w > 1 ? vec("i1", w) + ", " : "") + vec(compute_elem(d), w));
  }
  std::string conv(const std::string& op, const std::string& x, DType from, DType to, int w) {
    return emit(op + " " + x + " : " + vec(compute_elem(from), w) + " to " +
                vec(compute_elem(to), w));
  }
  /// Node `n` on operand values `a`: op_value, rounded to the result's dtype when that
  /// is f16 or bf16.
  std::string node(const Node& n, const std::vector<std::string>& a, int w);
  /// The value of `n`'s op, computed in the operands' compute types.
  std::string op_value(const Node& n, const std::vector<std::string>& a, int w);
  /// A value of dtype `d` as loaded (`w` lanes of memory_elem(d)) → its compute type:
  /// bool `!= 0`, f16/bf16 widened to f32 exactly (NaN payloads kept).
  std::string load_value(const std::string& x, DType d, int w);
  /// The inverse of load_value for a value of dtype `d` (f16/bf16: an f32 that the
  /// dtype represents exactly, so the conversion does not round).
  std::string store_value(const std::string& x, DType d, int w);
  /// f32 `x` rounded to f16/bf16 `d` and widened back: the reference's float_to_f16 /
  /// float_to_bf16 (runtime/tensor.h), round to nearest even, NaN as they give it.
  std::string round_half(const std::string& x, DType d, int w) {
    return half_to_f32(f32_to_half(x, d, /*round=*/true, w), d, w);
  }
  /// `w` lanes of f16/bf16 bits (i16) → f32, exactly.
  std::string half_to_f32(const std::string& bits, DType d, int w);
  /// f32 `x` → f16/bf16 bits (i16): rounded as float_to_f16/float_to_bf16 do with
  /// `round`, else `x` must be exactly representable (NaN payloads kept).
  std::string f32_to_half(const std::string& x, DType d, bool round, int w);
  /// f32 `x` rounded to bf16 bits (i16) by the target's instruction (vcvtneps2bf16),
  /// where the integer steps of f32_to_half run only if a lane is denormal, which the
  /// instruction would flush to zero: the same bits, NaN and ties included.
  std::string native_round_bf16(const std::string& x, int w,
                                const std::function<std::string()>& integer_steps);
  /// f32 `x` with the quiet bit set in its NaN lanes (as a conversion through f64 sets it).
  std::string quiet_nan(const std::string& x, int w);
  /// `op x : from to to` on element types given by name (bitcasts, i16 ↔ i32).
  std::string convert(const std::string& op, const std::string& x, const std::string& from,
                      const std::string& to, int w) {
    return emit(op + " " + x + " : " + vec(from, w) + " to " + vec(to, w));
  }
  std::string libm(const std::string& fn, const std::string& x, int w);
  std::string math_f64(const char* op, const std::string& x, DType d, int w);
  std::string cast(const std::string& x, DType from, DType to, int w);
  std::string gelu(const std::string& x, DType d, bool tanh, int w);
  /// erf(x) for f32 (and f16/bf16, computed in f32) as two polynomials and a blend, no
  /// divide (emit_math.cc), on the CPU and the GPU alike; f64 keeps `math.erf`.
  std::string erf(const std::string& x, DType d, int w);
  void body(int w, const std::string& i, const std::vector<std::string>& bases,
            const std::vector<std::string>& splats, const std::vector<std::string>& outs);
  std::unordered_map<ValueId, std::string> compute(int w, const std::string& i,
                                                   const std::vector<std::string>& bases,
                                                   const std::vector<std::string>& splats,
                                                   const Node* stop);
  void header(std::vector<std::string>& ptr, const std::string& symbol);
  /// The alignment of a `w`-lane access to memory of dtype `d`: the element's size on
  /// the CPU, the whole vector's in GPU code (set_gpu_width).
  int64_t access_align(DType d, int w) const {
    return static_cast<int64_t>(dtype_size(d)) * (gpu_code_ ? w : 1);
  }
  /// Emits `scf.if` on whether every buffer in `buffers` (pointer and dtype) is aligned
  /// for width_-lane accesses; `vector` emits the then-branch, `scalar` the else-branch
  /// (GPU code: loop slots and the inputs block may hand a kernel any element address).
  void if_aligned(const std::vector<std::pair<std::string, DType>>& buffers,
                  const std::function<void()>& vector, const std::function<void()>& scalar);
  /// The operands read along the row (stride 1 there; the others are splats or per-row
  /// scalars), as if_aligned takes them: pointer and dtype.
  std::vector<std::pair<std::string, DType>> row_operands(const std::vector<std::string>& ptr) const;
  /// The GPU elementwise loops: one thread per element (width 1), or per vector unit.
  void gpu_elements(const std::vector<std::string>& ptr);
  void gpu_vector_units(const std::vector<std::string>& ptr);
  /// Opens the loop over rows [0, count) with induction variable `iv` ("%r"): the
  /// caller's share [row_begin, row_end) on the CPU, a grid-stride loop on the GPU.
  void open_rows(const std::string& iv, int64_t count);
  /// `x` (dtype `d`) combined over the warp's lanes with `red`'s operation (sums in f64):
  /// every lane gets the result (set_row_lanes: a warp, or a block through shared memory).
  std::string warp_combine(const Node& red, std::string x, DType d);
  /// Column groups: `x` (this warp's share of its column, dtype `d`) combined over the
  /// block's 8 warps in warp order; every thread gets its column's result.
  std::string group_combine(const Node& red, const std::string& x, DType d);
  /// Lane `x` of the lane `offset` places away by xor (nvvm.shfl.sync bfly).
  std::string shuffle_xor(const std::string& x, DType d, int offset);
  /// The f64 sum of the lanes of `acc` (type `t`, `w` lanes): `acc` itself when w == 1.
  std::string lanes_sum(const std::string& acc, const std::string& t, int w);
  /// Lane `lane` of `acc` (element type `st`, vector type `vt`): `acc` when w == 1.
  std::string lane(const std::string& acc, int lane, const std::string& st,
                   const std::string& vt, int w);
  void operand_base(size_t k, const std::string& p, const std::string& off,
                    std::vector<std::string>& bases, std::vector<std::string>& splats);
  void row_pointers(const std::vector<std::string>& ptr, const std::string& r,
                    std::vector<std::string>& bases, std::vector<std::string>& splats,
                    std::vector<std::string>& outs);
  std::string footer();
  std::string offset(size_t k, const std::string& idx, const std::vector<int>& list);
  std::string gep(const std::string& p, const std::string& off, DType d) {
    return off.empty() ? p : emit("llvm.getelementptr " + p + "[" + off + "] : (!llvm.ptr, i64) -> !llvm.ptr, " + memory_elem(d));
  }
  void operand_bases(const std::vector<std::string>& ptr, const std::vector<std::string>& row_off,
                     const std::string& o, const std::vector<int>& list,
                     std::vector<std::string>& bases, std::vector<std::string>& splats);
  std::string accumulate(const Node& red, const std::string& acc, const std::string& x, int w);
  /// Row bodies (emit_rows.cc), in the order row_module emits them. RowLoop holds one
  /// module's plan and layout and the values of the row being emitted.
  struct RowLoop;
  /// The loop over rows with `w` lanes per access (width_, or 1 where GPU code finds its
  /// buffers unaligned): the per-row inputs loaded, then each level's reduction pass and
  /// the per-row nodes it makes known, then the stores.
  void row_loop(RowLoop& rl, int w);
  /// The per-row nodes known after reduction pass `level` (0: before the first), computed
  /// once per row as scalars.
  void row_scalars(RowLoop& rl, int level);
  /// Full-shape value `v` at element `i` of the row, `w` lanes (memoized in rl.val, which
  /// holds one loop body's values): a splat, a load, or its node on its operands' values.
  std::string row_value(RowLoop& rl, ValueId v, int w, const std::string& i);
  /// Reduction pass `pass`: the reductions of that level accumulated in one loop over the
  /// outer reduced dims, each with its vector loop and scalar tail along the row; their
  /// per-row totals go to rl.scalar.
  void row_reductions(RowLoop& rl, int pass, int w);
  /// One loop along the row over [from, to), `w` lanes per step (the warp's lanes share
  /// it in warp-row mode: lane l takes elements from + l·w, from + (32 + l)·w, ...),
  /// accumulating `reds` into `acc` (replaced by the loop's results).
  void row_accumulate(RowLoop& rl, const std::vector<const Node*>& reds, int64_t from, int64_t to,
                      int w, std::vector<std::string>& acc, const std::vector<std::string>& types);
  /// `red`'s per-row value from its vector and scalar accumulators: sums add the lanes in
  /// f64, max/min fold them in one by one, then the warp's lanes combine; the mean's
  /// division and the rounding to the result's dtype follow.
  std::string row_total(RowLoop& rl, const Node& red, const std::string& vector_acc,
                        const std::string& scalar_acc, const std::string& vt,
                        const std::string& st, int w);
  /// The last pass: the full-shape outputs, row r at r·L + o·length + i.
  void row_stores(RowLoop& rl, int w);
  /// One loop along the row over [from, to) storing the full-shape outputs `full_outs`
  /// at their row pointers `outs`.
  void row_store_loop(RowLoop& rl, const std::vector<size_t>& full_outs,
                      const std::vector<std::string>& outs, int64_t from, int64_t to, int w);
  /// The per-row outputs: one element per row (stored by lane 0 in warp-row mode).
  void row_scalar_stores(RowLoop& rl);
  /// A loop's `c` results: its declaration (`%name:c`, a lone result `%name`) and the
  /// names of each (`%name#j`).
  std::pair<std::string, std::vector<std::string>> loop_results(int c);
  /// Opens `res = scf.for iv = lo to hi step step iter_args(args = inits) -> (types)`;
  /// `along`: a loop along the row, which the warp's lanes share in warp-row mode (lane l
  /// takes elements lo + l·step, lo + (lanes + l)·step, ...).
  void open_loop(const std::string& res, const std::string& iv, int64_t lo, int64_t hi,
                 int64_t step, const std::vector<std::string>& inits, std::vector<std::string>& args,
                 const std::vector<std::string>& types, bool along = false);
  /// `lo` + lane_id_ · `step`: this lane's first element of a loop along the row that
  /// the lanes share (warp-row mode), `step` elements per access.
  std::string lane_start(const std::string& lo, int64_t step);
  /// Prints `res = scf.for iv = lo to hi step step iter_args(args[j] = inits[j]) ->
  /// (types)` over the i64 values `lo`, `hi` and `step` (no inits: no iter_args and no
  /// results, `res` empty) and indents the body; open_loop names its values and
  /// args itself, reduce_rows passes its own.
  void for_header(const std::string& res, const std::string& iv, const std::string& lo,
                  const std::string& hi, const std::string& step,
                  const std::vector<std::string>& args, const std::vector<std::string>& inits,
                  const std::vector<std::string>& types);
  /// Closes open_loop's (or for_header's) loop, yielding `yields` of `types` (none: no results).
  void close_loop(const std::vector<std::string>& yields, const std::vector<std::string>& types);
  /// Reduction bodies (emit_reduction.cc), in the order reduction_module emits them.
  /// ReductionLoop holds one module's reduction, layout and buffers.
  struct ReductionLoop;
  /// The loop over the rows (output elements, or column blocks), `w` lanes per access
  /// along a row (width_, or 1 where GPU code finds its buffers unaligned).
  void reduction_rows(ReductionLoop& rl, int w);
  /// Column groups: this lane's column in the current block of 32, clamped to the last
  /// (rl.valid_column says whether it exists); sets group_id_ to this thread's warp.
  std::string column_group_row(ReductionLoop& rl);
  /// The column layout's row `r`: a kept index and a block of width_ columns (or, after
  /// the blocks, a single column), each emitted by reduction_column.
  void reduction_columns(ReductionLoop& rl, const std::string& r);
  /// Reduces and stores the `w` columns of block (or single column) `b` of the row at
  /// `row_off` (the operands' offsets) and `out_row` (the output's).
  void reduction_column(ReductionLoop& rl, const std::vector<std::string>& row_off,
                        const std::string& out_row, const std::string& b, int64_t blocks, int w);
  /// Stores accumulator `acc` (w lanes; sums in f64) at `index` of the output: the
  /// mean's division and the rounding to the result's dtype first; one lane stores.
  void reduction_store(ReductionLoop& rl, std::string acc, const std::string& index, int w);
  /// Emits `scf.if cond` with `then` and `otherwise` emitting its two branches.
  void if_else(const std::string& cond, const std::function<void()>& then,
               const std::function<void()>& otherwise);
  std::string reduce_rows(const Node& red, const ReductionSpace& rs,
                          const std::vector<std::string>& ptr, const std::vector<std::string>& row_off,
                          const std::vector<int>& list, const std::string& col, int w);

  const Graph& g_;
  const CollapsedSpace& space_;
  int width_;
  bool gpu_;
  bool gpu_code_;           ///< GPU code, for the device or the host (set_gpu_width).
  bool native_bf16_ = false;  ///< set_native_bf16.
  int lanes_ = 1;           ///< GPU threads sharing one row (set_row_lanes).
  std::string symbol_;      ///< The kernel's name (its shared-memory global is named after it).
  std::string lane_id_;     ///< This thread's lane in its row's warp (lanes_ > 1).
  bool column_groups_ = false;  ///< set_column_groups.
  std::string group_id_;    ///< Column groups: this thread's warp (its share of the rows).
  int next_ = 0;
  std::string indent_ = "    ";
  std::ostringstream os_;
  std::vector<std::string> libm_;  ///< f64 functions called (declared after the kernel).
};

}  // namespace weft::codegen::emit_detail
