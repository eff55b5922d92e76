// Emits the MLIR text of a row body (emit_elementwise.h, emit_rows): keepdims
// reductions over the trailing axes whose per-row values the other nodes consume
// broadcast along the row, e.g. softmax
//
//   %m = max(%x) {axes=[-1], keepdims=true}   pass 1: m = max over the row
//   %d = sub(%x, %m); %e = exp(%d)
//   %s = sum(%e) {axes=[-1], keepdims=true}   pass 2: s = Σ exp(x - m)
//   %y = div(%e, %s)                          pass 3: y = exp(x - m) / s, stored
//
// Per row: a pass over the row for each level of reductions (the reductions of one
// level share one loop, each with its own accumulators), the per-row nodes (shapes that
// do not vary along the row: rsqrt(var + eps)) computed once as scalars between passes,
// the full-shape values recomputed from the operands in each pass that needs them (they
// are never written to memory unless they are outputs), then a last pass storing the
// full-shape outputs, and the per-row outputs stored at the end of the row.
//
// row_module reads as those steps: row_loop opens the loop over rows and calls, per
// level, row_reductions (one loop over the row, row_accumulate, then row_total per
// reduction) and row_scalars (the per-row nodes now known); then row_stores (the
// full-shape outputs, row_store_loop for the vector part and the tail) and
// row_scalar_stores. row_value gives a full-shape value at an element of the row.

#include <cmath>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen/emit_elementwise.h"
#include "codegen/emitter.h"

namespace weft::codegen {
namespace emit_detail {
namespace {

/// Which values of a row body are per-row, and the pass after which each is known.
struct RowPlan {
  std::vector<char> per_row;  ///< [value]: constant along the row (a reduction's result too)
  std::vector<int> level;     ///< [value]: the last reduction pass it depends on (0: none)
  int passes = 0;             ///< Reduction passes; one more stores the outputs.
};

RowPlan plan_rows(const Graph& g) {
  const Node& first = *first_reduction(g);
  const Shape& full = g.type(first.operands[0]).shape;
  const Shape& row = g.type(first.result()).shape;
  // Right-aligned against the full shape, a per-row value is 1 along every row axis.
  auto per_row = [&](const Shape& s) {
    for (int j = 0; j < s.rank(); ++j) {
      if (s[j] != 1 && row[j + full.rank() - s.rank()] == 1) return false;
    }
    return true;
  };
  RowPlan plan;
  plan.per_row.assign(g.num_values(), 0);
  plan.level.assign(g.num_values(), 0);
  for (const Input& in : g.inputs()) plan.per_row[in.value] = per_row(g.type(in.value).shape);
  for (const Node& n : g.nodes()) {
    int level = 0;
    for (ValueId o : n.operands) level = std::max(level, plan.level[o]);
    if (n.info().category == OpCategory::Reduction) {
      plan.level[n.result()] = level + 1;
      plan.per_row[n.result()] = 1;
      plan.passes = std::max(plan.passes, level + 1);
    } else {
      plan.level[n.result()] = level;
      plan.per_row[n.result()] = per_row(g.type(n.result()).shape);
    }
  }
  return plan;
}

std::string join(const std::vector<std::string>& xs) {
  std::string s;
  for (const std::string& x : xs) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

/// One row module's state (Emitter::row_module): the plan and layout, fixed, and the
/// values of the row being emitted, reset by each row_loop.
struct Emitter::RowLoop {
  RowLoop(const ReductionSpace& space, RowPlan row_plan) : rs(space), plan(std::move(row_plan)) {}
  const ReductionSpace& rs;
  RowPlan plan;
  std::vector<std::string> ptr;  ///< The buffers' pointers: inputs, then outputs.
  size_t n_in = 0;
  std::vector<int> kept, reduced;  ///< Dims other than the innermost (reduced), by kind.
  int64_t length = 0;              ///< The innermost reduced dim: the loops along the row.
  int64_t outer = 1;               ///< The other reduced dims' elements: the loop around them.
  std::vector<int> input_of;       ///< [value]: its input's index, or -1.
  // The row being emitted.
  std::vector<std::string> row_off, bases, splats;
  std::unordered_map<ValueId, std::string> scalar;  ///< Per-row values, as scalars.
  std::unordered_map<ValueId, std::string> val;     ///< One loop body's full-shape values.
};

std::string Emitter::row_module(const std::string& symbol, const ReductionSpace& rs) {
  RowLoop rl(rs, plan_rows(g_));
  header(rl.ptr, symbol);
  rl.n_in = g_.inputs().size();
  const int last = static_cast<int>(space_.dims.size()) - 1;
  for (int j = 0; j < last; ++j) (rs.reduced[j] ? rl.reduced : rl.kept).push_back(j);
  rl.length = space_.dims.back();
  for (int j : rl.reduced) rl.outer *= space_.dims[j];
  rl.input_of.assign(g_.num_values(), -1);
  for (size_t k = 0; k < rl.n_in; ++k) rl.input_of[g_.inputs()[k].value] = static_cast<int>(k);
  if (rs.rows() == 0) return footer();
  if (!gpu_code_ || width_ == 1) {
    row_loop(rl, width_);
    return footer();
  }
  // GPU code: the operands read along the row and the full-shape results are accessed
  // width_ lanes at a time where their addresses allow it.
  std::vector<std::pair<std::string, DType>> vectors = row_operands(rl.ptr);
  for (size_t j = 0; j < g_.outputs().size(); ++j) {
    const ValueId out = g_.outputs()[j];
    if (!rl.plan.per_row[out]) vectors.emplace_back(rl.ptr[rl.n_in + j], g_.type(out).dtype);
  }
  if_aligned(vectors, [&] { row_loop(rl, width_); }, [&] { row_loop(rl, 1); });
  return footer();
}

void Emitter::row_loop(RowLoop& rl, int w) {
  open_rows("%r", rl.rs.rows());
  rl.row_off.clear();
  rl.bases.clear();
  rl.splats.clear();
  rl.scalar.clear();
  rl.val.clear();
  for (size_t k = 0; k < rl.n_in; ++k) rl.row_off.push_back(offset(k, "%r", rl.kept));
  for (size_t k = 0; k < rl.n_in; ++k) {
    const ValueId v = g_.inputs()[k].value;
    if (!rl.plan.per_row[v]) continue;
    const DType d = g_.type(v).dtype;
    rl.scalar[v] = load_value(
        emit("llvm.load " + gep(rl.ptr[k], rl.row_off[k], d) + " : !llvm.ptr -> " + memory_elem(d)), d, 1);
  }
  row_scalars(rl, 0);
  for (int pass = 1; pass <= rl.plan.passes; ++pass) {
    row_reductions(rl, pass, w);
    row_scalars(rl, pass);
  }
  row_stores(rl, w);
  row_scalar_stores(rl);
  indent_.resize(indent_.size() - 2);
  os_ << indent_ << "}\n";
}

void Emitter::row_scalars(RowLoop& rl, int level) {
  for (const Node& n : g_.nodes()) {
    const ValueId r = n.result();
    if (n.info().category == OpCategory::Reduction || !rl.plan.per_row[r] ||
        rl.plan.level[r] > level || rl.scalar.count(r)) {
      continue;
    }
    std::vector<std::string> a;
    for (ValueId o : n.operands) a.push_back(rl.scalar.at(o));
    rl.scalar[r] = node(n, a, 1);
  }
}

std::string Emitter::row_value(RowLoop& rl, ValueId v, int w, const std::string& i) {
  if (auto it = rl.val.find(v); it != rl.val.end()) return it->second;
  const DType d = g_.type(v).dtype;
  std::string x;
  const int k = rl.input_of[v];
  if (rl.plan.per_row[v] || (k >= 0 && space_.strides[k].back() == 0)) {
    x = rl.plan.per_row[v] ? rl.scalar.at(v) : rl.splats[k];
    if (w > 1) x = emit("vector.broadcast " + x + " : " + compute_elem(d) + " to " + vec(compute_elem(d), w));
  } else if (k >= 0) {
    const std::string address = emit("llvm.getelementptr " + rl.bases[k] + "[" + i +
                                      "] : (!llvm.ptr, i64) -> !llvm.ptr, " + memory_elem(d));
    x = load_value(emit("llvm.load " + address + " {alignment = " +
                        std::to_string(access_align(d, w)) + " : i64} : !llvm.ptr -> " +
                        vec(memory_elem(d), w)),
                   d, w);
  } else {
    const Node& n = g_.node(g_.value(v).node);
    std::vector<std::string> a;
    for (ValueId o : n.operands) a.push_back(row_value(rl, o, w, i));
    x = node(n, a, w);
  }
  return rl.val[v] = x;
}

void Emitter::row_reductions(RowLoop& rl, int pass, int w) {
  std::vector<const Node*> reds;
  for (const Node& n : g_.nodes()) {
    if (n.info().category == OpCategory::Reduction && rl.plan.level[n.result()] == pass) reds.push_back(&n);
  }
  const int c = static_cast<int>(reds.size());
  std::vector<std::string> vinit, sinit, vt, st;
  for (const Node* red : reds) {
    const bool sum = red->op == Op::Sum || red->op == Op::Mean;
    const DType acc = sum ? DType::f64 : g_.type(red->result()).dtype;
    const double init = sum ? 0.0 : red->op == Op::Max ? -INFINITY : INFINITY;
    vinit.push_back(cst(acc, init, w));
    sinit.push_back(cst(acc, init, 1));
    vt.push_back(vec(compute_elem(acc), w));
    st.push_back(compute_elem(acc));
  }
  // Over the outer reduced dims: the vector loop and the scalar tail along the row.
  std::vector<std::string> inits = vinit, types = vt, args;
  inits.insert(inits.end(), sinit.begin(), sinit.end());
  types.insert(types.end(), st.begin(), st.end());
  auto [decl, res] = loop_results(2 * c);
  const std::string o = "%o" + std::to_string(next_++);
  open_loop(decl, o, 0, rl.outer, 1, inits, args, types);
  std::vector<std::string> v(args.begin(), args.begin() + c), s(args.begin() + c, args.end());
  operand_bases(rl.ptr, rl.row_off, o, rl.reduced, rl.bases, rl.splats);
  const int64_t main = rl.length / w * w;
  if (main > 0) row_accumulate(rl, reds, 0, main, w, v, vt);
  if (main < rl.length) row_accumulate(rl, reds, main, rl.length, 1, s, st);
  std::vector<std::string> yields = v;
  yields.insert(yields.end(), s.begin(), s.end());
  close_loop(yields, types);
  for (int j = 0; j < c; ++j) rl.scalar[reds[j]->result()] = row_total(rl, *reds[j], res[j], res[c + j], vt[j], st[j], w);
}

void Emitter::row_accumulate(RowLoop& rl, const std::vector<const Node*>& reds, int64_t from,
                             int64_t to, int w, std::vector<std::string>& acc,
                             const std::vector<std::string>& types) {
  const int c = static_cast<int>(reds.size());
  auto [decl, res] = loop_results(c);
  std::vector<std::string> args;
  const std::string i = "%i" + std::to_string(next_++);
  open_loop(decl, i, from, to, w, acc, args, types, /*along=*/true);
  rl.val.clear();
  std::vector<std::string> next;
  for (int j = 0; j < c; ++j) {
    next.push_back(accumulate(*reds[j], args[j], row_value(rl, reds[j]->operands[0], w, i), w));
  }
  close_loop(next, types);
  acc = res;
}

std::string Emitter::row_total(RowLoop& rl, const Node& red, const std::string& vector_acc,
                               const std::string& scalar_acc, const std::string& vt,
                               const std::string& st, int w) {
  const DType d = g_.type(red.result()).dtype;
  std::string total = scalar_acc;
  if (red.op == Op::Sum || red.op == Op::Mean) {
    total = bi("arith.addf", lanes_sum(vector_acc, vt, w), total, "f64");
    if (lanes_ > 1) total = warp_combine(red, total, DType::f64);
    if (red.op == Op::Mean) {
      total = bi("arith.divf", total, cst(DType::f64, static_cast<double>(rl.rs.reduced_size()), 1), "f64");
    }
    // f16/bf16 sums too are accumulated in f64, rounded to f32 (the reference's f32
    // kernel) and then once more to f16/bf16 below.
    if (d != DType::f64) total = conv("arith.truncf", total, DType::f64, d, 1);
  } else {
    for (int lane = 0; lane < w; ++lane) {
      total = accumulate(red, total, this->lane(vector_acc, lane, st, vt, w), 1);
    }
    if (lanes_ > 1) total = warp_combine(red, total, d);
  }
  return is_half(d) ? round_half(total, d, 1) : total;
}

void Emitter::row_stores(RowLoop& rl, int w) {
  std::vector<size_t> full_outs;
  for (size_t j = 0; j < g_.outputs().size(); ++j) {
    if (!rl.plan.per_row[g_.outputs()[j]]) full_outs.push_back(j);
  }
  const std::string row_base =
      bi("arith.muli", "%r", cst(DType::i64, static_cast<double>(rl.rs.reduced_size()), 1), "i64");
  if (full_outs.empty() || rl.length == 0) return;
  std::vector<std::string> none;
  const std::string o = "%o" + std::to_string(next_++);
  open_loop("", o, 0, rl.outer, 1, {}, none, {});
  operand_bases(rl.ptr, rl.row_off, o, rl.reduced, rl.bases, rl.splats);
  const std::string base = bi("arith.addi", row_base,
                              bi("arith.muli", o, cst(DType::i64, static_cast<double>(rl.length), 1), "i64"), "i64");
  std::vector<std::string> outs;
  for (size_t j : full_outs) outs.push_back(gep(rl.ptr[rl.n_in + j], base, g_.type(g_.outputs()[j]).dtype));
  const int64_t main = rl.length / w * w;
  row_store_loop(rl, full_outs, outs, 0, main, w);
  row_store_loop(rl, full_outs, outs, main, rl.length, 1);
  close_loop({}, {});
}

void Emitter::row_store_loop(RowLoop& rl, const std::vector<size_t>& full_outs,
                             const std::vector<std::string>& outs, int64_t from, int64_t to, int w) {
  if (from == to) return;
  std::vector<std::string> none;
  const std::string i = "%i" + std::to_string(next_++);
  open_loop("", i, from, to, w, {}, none, {}, /*along=*/true);
  rl.val.clear();
  // Every output is computed before any is stored: a result may take over the buffer of
  // an operand (memory_plan's in-place rule), read here at the same index.
  std::vector<std::string> xs;
  for (size_t j : full_outs) xs.push_back(row_value(rl, g_.outputs()[j], w, i));
  for (size_t k = 0; k < full_outs.size(); ++k) {
    const DType d = g_.type(g_.outputs()[full_outs[k]]).dtype;
    const std::string x = store_value(xs[k], d, w);
    const std::string address = emit("llvm.getelementptr " + outs[k] + "[" + i +
                                      "] : (!llvm.ptr, i64) -> !llvm.ptr, " + memory_elem(d));
    os_ << indent_ << "llvm.store " << x << ", " << address << " {alignment = "
        << access_align(d, w) << " : i64} : " << vec(memory_elem(d), w) << ", !llvm.ptr\n";
  }
  close_loop({}, {});
}

void Emitter::row_scalar_stores(RowLoop& rl) {
  bool guarded = false;
  for (size_t j = 0; j < g_.outputs().size(); ++j) {
    if (lanes_ > 1 && rl.plan.per_row[g_.outputs()[j]] && !guarded) {
      const std::string first_lane = bi("arith.cmpi eq,", lane_id_, cst(DType::i64, 0, 1), "i64");
      os_ << indent_ << "scf.if " << first_lane << " {\n";
      indent_ += "  ";
      guarded = true;
    }
    const ValueId out = g_.outputs()[j];
    if (!rl.plan.per_row[out]) continue;
    const DType d = g_.type(out).dtype;
    const std::string x = store_value(rl.scalar.at(out), d, 1);
    const std::string address = gep(rl.ptr[rl.n_in + j], "%r", d);
    os_ << indent_ << "llvm.store " << x << ", " << address << " {alignment = "
        << dtype_size(d) << " : i64} : " << memory_elem(d) << ", !llvm.ptr\n";
  }
  if (guarded) {
    indent_.resize(indent_.size() - 2);
    os_ << indent_ << "}\n";
  }
}

std::pair<std::string, std::vector<std::string>> Emitter::loop_results(int c) {
  const std::string name = "%t" + std::to_string(next_++);
  std::vector<std::string> refs;
  for (int j = 0; j < c; ++j) refs.push_back(c == 1 ? name : name + "#" + std::to_string(j));
  return {c == 1 ? name : name + ":" + std::to_string(c), refs};
}

void Emitter::open_loop(const std::string& res, const std::string& iv, int64_t lo, int64_t hi,
                        int64_t step, const std::vector<std::string>& inits,
                        std::vector<std::string>& args, const std::vector<std::string>& types,
                        bool along) {
  std::string clo = cst(DType::i64, static_cast<double>(lo), 1);
  const std::string chi = cst(DType::i64, static_cast<double>(hi), 1);
  if (along && lanes_ > 1) {
    clo = lane_start(clo, step);
    step *= lanes_;
  }
  const std::string cstep = cst(DType::i64, static_cast<double>(step), 1);
  std::vector<std::string> named;
  for (size_t a = 0; a < inits.size(); ++a) named.push_back("%a" + std::to_string(next_++));
  for_header(res, iv, clo, chi, cstep, named, inits, types);
  args.insert(args.end(), named.begin(), named.end());
}

std::string Emitter::lane_start(const std::string& lo, int64_t step) {
  const std::string first =
      step == 1 ? lane_id_ : bi("arith.muli", lane_id_, cst(DType::i64, static_cast<double>(step), 1), "i64");
  return bi("arith.addi", lo, first, "i64");
}

void Emitter::for_header(const std::string& res, const std::string& iv, const std::string& lo,
                         const std::string& hi, const std::string& step,
                         const std::vector<std::string>& args, const std::vector<std::string>& inits,
                         const std::vector<std::string>& types) {
  os_ << indent_ << (res.empty() ? "" : res + " = ") << "scf.for " << iv << " = " << lo << " to "
      << hi << " step " << step;
  if (!inits.empty()) {
    os_ << " iter_args(";
    for (size_t a = 0; a < inits.size(); ++a) os_ << (a ? ", " : "") << args[a] << " = " << inits[a];
    os_ << ") -> (" << join(types) << ")";
  }
  os_ << " : i64 {\n";
  indent_ += "  ";
}

void Emitter::close_loop(const std::vector<std::string>& yields, const std::vector<std::string>& types) {
  if (!yields.empty()) os_ << indent_ << "scf.yield " << join(yields) << " : " << join(types) << "\n";
  indent_.resize(indent_.size() - 2);
  os_ << indent_ << "}\n";
}

}  // namespace emit_detail

std::string emit_rows(const Graph& body, const std::string& symbol, bool native_bf16) {
  const ReductionSpace rs = collapse_reduction_space(body, FusedKind::row);
  emit_detail::Emitter e(body, rs.space);
  e.set_native_bf16(native_bf16);
  return e.row_module(symbol, rs);
}

int row_passes(const Graph& body) { return emit_detail::plan_rows(body).passes + 1; }

}  // namespace weft::codegen
