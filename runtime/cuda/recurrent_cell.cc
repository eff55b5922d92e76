#include "runtime/cuda/recurrent_cell.h"

#include <algorithm>
#include <optional>
#include <string>
#include <variant>

#include "ir/kernel_space.h"
#include "runtime/cuda/recurrent_reference.h"

namespace weft::cuda {
namespace {

// ---- The register program.

bool is_f32(const Graph& g, ValueId v) { return g.type(v).dtype == DType::f32; }

// Whether `v` is a float a buffer of the program may hold (f32, bf16, f16: loaded to f32
// registers exactly, rounded where stored).
bool is_float(const Graph& g, ValueId v) {
  const DType t = g.type(v).dtype;
  return t == DType::f32 || is_half(t);
}

// Whether `v` is a bf16 or f16 value that no node reads: only stored, where the store
// rounds it (recurrent_program.h), as the reference rounds a low result.
bool only_stored(const Graph& g, ValueId v) {
  if (is_f32(g, v)) return false;
  for (const Node& n : g.nodes()) {
    for (ValueId o : n.operands) {
      if (o == v && n.op != Op::Pad) return false;  // a store window's pad is the store
    }
  }
  return true;
}

// The value `v` stands for in registers: a window's slice, a store window's pad and a
// cast that changes nothing in f32 registers are their operand — a cast to f32 from a
// float or a bool (exact), or a cast to bf16 or f16 of a float or a bool whose result is
// only stored (the store rounds it, once, as the cast would).
ValueId register_value(const Graph& g, ValueId v) {
  for (;;) {
    const int p = g.value(v).node;
    if (p < 0) return v;
    const Node& n = g.node(p);
    const bool from = is_float(g, n.operands[0]) || g.type(n.operands[0]).dtype == DType::boolean;
    const bool kept = is_f32(g, n.result()) || (is_float(g, n.result()) && only_stored(g, n.result()));
    const bool alias = n.op == Op::Slice || n.op == Op::Pad || (n.op == Op::Cast && from && kept);
    if (!alias) return v;
    v = n.operands[0];
  }
}

// gelu's instruction code for its form, or 0 for a form the interpreter refuses.
uint16_t gelu_code(const Node& n) {
  const std::string form = n.has_attr("approximate") ? n.str_attr("approximate") : "none";
  return form == "none" ? kGeluOp : form == "tanh" ? kGeluTanhOp : 0;
}

// Whether `n` is a sum or mean over the last axis of its operand, kept (a row kernel's
// reduction: a layer norm's means, its gradient's sums), and which.
std::optional<uint8_t> row_reduction(const Graph& g, const Node& n) {
  if ((n.op != Op::Sum && n.op != Op::Mean) || !n.has_attr("axes") || !n.bool_attr("keepdims")) return std::nullopt;
  const IntList& axes = n.ints_attr("axes");
  const int rank = g.type(n.operands[0]).shape.rank();
  if (rank == 0 || axes.size() != 1 || (axes[0] != rank - 1 && axes[0] != -1)) return std::nullopt;
  return n.op == Op::Mean ? kRowMean : kRowSum;
}

// Why `n` cannot be in a register program (a row phase's when `row`), or "".
std::string node_refusal(const Graph& g, const Node& n, bool row) {
  const std::string name(op_name(n.op));
  // A kernel's slices are input windows and its pads store windows (codegen's emitter
  // reads them so, passes/fold_slices.h and fold_concats.h make no others).
  if (n.op == Op::Slice || n.op == Op::Pad) {
    bool window = false;
    for (size_t k = 0; k < g.inputs().size() && n.op == Op::Slice; ++k) window = window || input_window(g, k) == &n;
    for (size_t o = 0; o < g.outputs().size() && n.op == Op::Pad; ++o) window = window || output_window(g, o) == &n;
    WEFT_CHECK(window, "persistent loop plan: a kernel's " + name + " is not a window");
    return "";
  }
  if (n.op == Op::Cast) {
    // To f32: an alias; to bf16 or f16: an alias when only stored, else a rounding.
    if (is_float(g, n.result())) return "";
    return "a cast to " + std::string(dtype_name(g.type(n.result()).dtype));
  }
  // Attributes first: a CellInstr holds none, except gelu's form (an op of its own) and a
  // row kernel's reduction over the last axis (kRowReduceOp).
  if (n.op == Op::Gelu) {
    if (gelu_code(n) == 0) return "op gelu with approximate=\"" + n.str_attr("approximate") + "\"";
  } else if (n.op == Op::Sum || n.op == Op::Mean) {
    if (!row) return "op " + name + " (a reduction outside a row kernel)";
    if (!row_reduction(g, n)) return "op " + name + " not over the last axis, kept";
  } else if (row && (n.op == Op::Max || n.op == Op::Min)) {
    return "op " + name + " (a row kernel's " + name + ": only sums and means)";
  } else if (!n.attrs.empty()) {
    return "op " + name + " with attributes";
  }
  const bool supported = n.op == Op::Gelu || n.op == Op::Sum || n.op == Op::Mean || recurrent_op_supported(n.op);
  if (!supported || n.results.size() != 1) return "op " + name + " (not one a persistent loop computes)";
  for (ValueId v : n.operands) {
    if (!is_float(g, v) && g.type(v).dtype != DType::boolean) {
      return "a " + std::string(dtype_name(g.type(v).dtype)) + " value";
    }
  }
  const DType result = g.type(n.result()).dtype;
  if (!is_float(g, n.result()) && result != DType::boolean) return "a " + std::string(dtype_name(result)) + " value";
  return "";
}

// Registers handed out and back: the lowest free one first.
class Registers {
 public:
  std::optional<uint8_t> take() {
    for (int r = 0; r < kMaxCellRegisters; ++r) {
      if (!busy_[r]) {
        busy_[r] = true;
        return static_cast<uint8_t>(r);
      }
    }
    return std::nullopt;
  }
  void give(uint8_t r) { busy_[r] = false; }

 private:
  bool busy_[kMaxCellRegisters] = {};
};

}  // namespace

StatusOr<CellSpace> cell_space(const Graph& body) {
  const Node* window0 = output_window(body, 0);
  const Shape& out = body.type(window0 ? window0->operands[0] : body.outputs()[0]).shape;
  for (size_t o = 0; o < body.outputs().size(); ++o) {
    const Node* window = output_window(body, o);
    WEFT_CHECK(body.type(window ? window->operands[0] : body.outputs()[o]).shape == out,
               "persistent loop plan: a kernel's results have different shapes");
  }
  const CollapsedSpace c = collapse_space(body);
  if (c.dims.size() > 2) {
    return Error("its iteration space " + out.to_string() + " does not collapse to two dimensions");
  }
  const size_t n = c.dims.size();  // 1 or 2
  CellSpace s;
  s.rows = n == 2 ? c.dims[0] : 1;
  s.cols = c.dims[n - 1];
  const auto layout = [&](int64_t offset, const std::vector<int64_t>& strides) {
    return CellLayout{offset, n == 2 ? strides[0] : 0, strides[n - 1]};
  };
  for (size_t k = 0; k < c.strides.size(); ++k) s.operands.push_back(layout(c.offsets[k], c.strides[k]));
  for (size_t o = 0; o < body.outputs().size(); ++o) {
    // A result stored row-major has no strides of its own in the collapsed space.
    if (c.out_strides[o].empty()) s.results.push_back(CellLayout{0, n == 2 ? s.cols : 0, 1});
    else s.results.push_back(layout(c.out_offsets[o], c.out_strides[o]));
  }
  return s;
}

StatusOr<CellSpace> row_space(const Graph& body) {
  // The reductions' operand is the row kernel's full shape [rows..., cols].
  std::optional<Shape> full;
  for (const Node& n : body.nodes()) {
    if (n.op == Op::Slice || n.op == Op::Pad) return Error("a row kernel with a window (" + std::string(op_name(n.op)) + ")");
    if (!row_reduction(body, n)) continue;
    const Shape& s = body.type(n.operands[0]).shape;
    if (full && !(*full == s)) return Error("row reductions over " + full->to_string() + " and " + s.to_string());
    full = s;
  }
  WEFT_CHECK(full.has_value(), "persistent loop plan: a row kernel without a reduction over its last axis");
  const int rank = full->rank();
  CellSpace space;
  space.cols = full->dims[static_cast<size_t>(rank - 1)];
  space.rows = full->numel() / std::max<int64_t>(space.cols, 1);
  // Each value is read at (row, col) as it broadcasts to the full shape: all of it
  // (row-major), one value per row ([rows..., 1]), one per column ([cols], leading 1s) or
  // one in all (every dimension 1).
  const auto layout = [&](const Shape& s) -> std::optional<CellLayout> {
    if (s.numel() == 1) return CellLayout{0, 0, 0};
    if (s == *full) return CellLayout{0, space.cols, 1};
    std::vector<int64_t> row_shape = full->dims;
    row_shape.back() = 1;
    if (s.dims == row_shape) return CellLayout{0, 1, 0};
    if (s.dims.back() == space.cols && s.numel() == space.cols) return CellLayout{0, 0, 1};
    return std::nullopt;
  };
  for (const Input& in : body.inputs()) {
    const Shape& s = body.type(in.value).shape;
    const std::optional<CellLayout> l = layout(s);
    if (!l) return Error("an operand " + s.to_string() + " of a row kernel over " + full->to_string());
    space.operands.push_back(*l);
  }
  for (ValueId out : body.outputs()) {
    const Shape& s = body.type(out).shape;
    if (!(s == *full)) return Error("a result " + s.to_string() + " of a row kernel over " + full->to_string());
    space.results.push_back(CellLayout{0, space.cols, 1});
  }
  return space;
}

StatusOr<std::vector<CellInstr>> cell_program(const Graph& g, bool row) {
  for (const Input& in : g.inputs()) {
    if (!is_float(g, in.value)) return Error("a " + std::string(dtype_name(g.type(in.value).dtype)) + " operand");
  }
  for (ValueId out : g.outputs()) {
    if (!is_float(g, out)) return Error("a " + std::string(dtype_name(g.type(out).dtype)) + " result");
  }
  for (const Node& n : g.nodes()) {
    if (const std::string why = node_refusal(g, n, row); !why.empty()) return Error(why);
  }
  // The last node reading each register value; outputs are read by the stores at the end.
  const int end = static_cast<int>(g.nodes().size());
  std::vector<int> last_use(static_cast<size_t>(g.num_values()), -1);
  for (int i = 0; i < end; ++i) {
    for (ValueId v : g.nodes()[static_cast<size_t>(i)].operands) last_use[register_value(g, v)] = i;
  }
  for (ValueId out : g.outputs()) last_use[register_value(g, out)] = end;
  std::vector<int> input_of(static_cast<size_t>(g.num_values()), -1);
  for (size_t k = 0; k < g.inputs().size(); ++k) input_of[g.inputs()[k].value] = static_cast<int>(k);

  std::vector<CellInstr> code;
  int reductions = 0;
  std::vector<int> reg(static_cast<size_t>(g.num_values()), -1);
  Registers regs;
  const Error full("more than " + std::to_string(kMaxCellRegisters) + " registers");
  // The register holding `v`, an input loaded where it is first read.
  const auto read = [&](ValueId v) -> std::optional<uint8_t> {
    v = register_value(g, v);
    if (reg[v] < 0) {
      std::optional<uint8_t> r = regs.take();
      if (!r) return std::nullopt;
      WEFT_CHECK(input_of[v] >= 0, "persistent loop plan: a value read before it is computed");
      code.push_back({kLoadOp, *r, static_cast<uint8_t>(input_of[v]), 0, 0});
      reg[v] = *r;
    }
    return static_cast<uint8_t>(reg[v]);
  };
  for (int i = 0; i < end; ++i) {
    const Node& n = g.nodes()[static_cast<size_t>(i)];
    if (register_value(g, n.result()) != n.result()) continue;  // an alias
    uint8_t operands[3] = {0, 0, 0};
    for (size_t j = 0; j < n.operands.size(); ++j) {
      std::optional<uint8_t> r = read(n.operands[j]);
      if (!r) return full;
      operands[j] = *r;
    }
    std::optional<uint8_t> dst = regs.take();
    if (!dst) return full;
    // A bf16 or f16 value read by another op: rounded in its register, where the
    // reference rounds it (a cast, or a low op's result); one only stored is rounded by
    // its store.
    const DType type = g.type(n.result()).dtype;
    const bool low = type == DType::bf16 || type == DType::f16;
    const auto round = static_cast<uint8_t>(type == DType::bf16 ? ElementType::bf16 : ElementType::f16);
    if (n.op == Op::Cast) {
      code.push_back({kRoundOp, *dst, operands[0], round, 0});
    } else if (n.op == Op::Gelu) {
      code.push_back({gelu_code(n), *dst, operands[0], 0, 0});
      if (low && !only_stored(g, n.result())) code.push_back({kRoundOp, *dst, *dst, round, 0});
    } else if (n.op == Op::Sum || n.op == Op::Mean) {
      if (++reductions > kMaxRowReductions) return Error("more than " + std::to_string(kMaxRowReductions) + " row reductions");
      code.push_back({kRowReduceOp, *dst, operands[0], *row_reduction(g, n), 0});
      if (low && !only_stored(g, n.result())) code.push_back({kRoundOp, *dst, *dst, round, 0});
    } else {
      code.push_back({static_cast<uint16_t>(n.op), *dst, operands[0], operands[1], operands[2]});
      if (low && !only_stored(g, n.result())) code.push_back({kRoundOp, *dst, *dst, round, 0});
    }
    reg[n.result()] = *dst;
    for (ValueId v : n.operands) {
      const ValueId r = register_value(g, v);
      if (last_use[r] == i && reg[r] >= 0) {
        regs.give(static_cast<uint8_t>(reg[r]));
        reg[r] = -2;  // freed, never read again
      }
    }
    if (last_use[n.result()] < 0) regs.give(*dst);  // computed for nothing
  }
  // The stores last: a result may overwrite an operand (in place) that a lazy load reads.
  for (size_t o = 0; o < g.outputs().size(); ++o) {
    std::optional<uint8_t> r = read(g.outputs()[o]);
    if (!r) return full;
    code.push_back({kStoreOp, 0, static_cast<uint8_t>(o), *r, 0});
  }
  return code;
}

}  // namespace weft::cuda
