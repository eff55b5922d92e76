#include "runtime/cuda/recurrent_cell.h"

#include <optional>
#include <string>
#include <variant>

#include "runtime/cuda/recurrent_reference.h"

namespace weft::cuda {
namespace {

// ---- The iteration space (codegen's collapse_space, whose rule this follows: runtime/
// may not depend on codegen/, DESIGN.md decision 10).

// codegen's input_window: body input k read through a slice with unit steps that is its
// only use (passes/fold_slices.h).
const Node* input_window(const Graph& body, size_t k) {
  const ValueId v = body.inputs()[k].value;
  const Node* window = nullptr;
  int uses = 0;
  for (const Node& n : body.nodes()) {
    for (ValueId o : n.operands) {
      if (o != v) continue;
      ++uses;
      window = &n;
    }
  }
  for (ValueId out : body.outputs()) uses += out == v;
  if (uses != 1 || window == nullptr || window->op != Op::Slice) return nullptr;
  if (const Attribute* step = window->attr("step")) {
    for (int64_t s : std::get<IntList>(*step)) {
      if (s != 1) return nullptr;
    }
  }
  return window;
}

// codegen's output_window: output o stored through a pad (passes/fold_concats.h).
const Node* output_window(const Graph& body, size_t o) {
  const int p = body.value(body.outputs()[o]).node;
  return p >= 0 && body.node(p).op == Op::Pad ? &body.node(p) : nullptr;
}

// A buffer of shape `in` laid out with `strides`, read across `out`: its stride along each
// dimension of `out` (0 where it is broadcast).
std::vector<int64_t> broadcast_strides(const Shape& in, const std::vector<int64_t>& strides, const Shape& out) {
  std::vector<int64_t> st(static_cast<size_t>(out.rank()), 0);
  for (int d = 0; d < out.rank(); ++d) {
    const int id = d - (out.rank() - in.rank());
    if (id >= 0 && in[id] != 1) st[static_cast<size_t>(d)] = strides[static_cast<size_t>(id)];
  }
  return st;
}

// ---- The register program.

bool is_f32(const Graph& g, ValueId v) { return g.type(v).dtype == DType::f32; }

// The value `v` stands for in registers: a window's slice, a store window's pad and a
// cast that changes nothing in f32 registers (f32 or bool to f32) are their operand.
ValueId register_value(const Graph& g, ValueId v) {
  for (;;) {
    const int p = g.value(v).node;
    if (p < 0) return v;
    const Node& n = g.node(p);
    const bool alias = n.op == Op::Slice || n.op == Op::Pad ||
                       (n.op == Op::Cast && is_f32(g, n.result()) &&
                        (is_f32(g, n.operands[0]) || g.type(n.operands[0]).dtype == DType::boolean));
    if (!alias) return v;
    v = n.operands[0];
  }
}

// Why `n` cannot be in a register program, or "".
std::string node_refusal(const Graph& g, const Node& n) {
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
    return register_value(g, n.result()) != n.result() ? "" : "a cast to " + std::string(dtype_name(g.type(n.result()).dtype));
  }
  // Attributes first: a CellInstr holds none (gelu's tanh form would compute as erf's).
  if (!n.attrs.empty()) return "op " + name + " with attributes";
  if (!recurrent_op_supported(n.op) || n.results.size() != 1) return "op " + name + " (not one a persistent loop computes)";
  for (ValueId v : n.operands) {
    if (!is_f32(g, v) && g.type(v).dtype != DType::boolean) return "a " + std::string(dtype_name(g.type(v).dtype)) + " value";
  }
  if (!is_f32(g, n.result()) && g.type(n.result()).dtype != DType::boolean) {
    return "a " + std::string(dtype_name(g.type(n.result()).dtype)) + " value";
  }
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
  std::vector<std::vector<int64_t>> full;  // operands, then results
  std::vector<int64_t> offsets;
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    const Shape& source = body.type(body.inputs()[k].value).shape;
    const Node* window = input_window(body, k);
    int64_t offset = 0;
    if (window != nullptr) {
      const IntList& start = window->ints_attr("start");
      for (int d = 0; d < source.rank(); ++d) offset += start[static_cast<size_t>(d)] * source.strides()[static_cast<size_t>(d)];
    }
    full.push_back(broadcast_strides(window ? body.type(window->result()).shape : source, source.strides(), out));
    offsets.push_back(offset);
  }
  for (size_t o = 0; o < body.outputs().size(); ++o) {
    const Node* window = output_window(body, o);
    const Shape& stored = body.type(window ? window->operands[0] : body.outputs()[o]).shape;
    WEFT_CHECK(stored == out, "persistent loop plan: a kernel's results have different shapes");
    if (window == nullptr) {
      full.push_back(out.strides());
      offsets.push_back(0);
      continue;
    }
    const Shape& dest = body.type(window->result()).shape;
    full.push_back(broadcast_strides(stored, dest.strides(), out));
    int64_t offset = 0;
    const IntList& low = window->ints_attr("low");
    for (int d = 0; d < dest.rank(); ++d) offset += low[static_cast<size_t>(d)] * dest.strides()[static_cast<size_t>(d)];
    offsets.push_back(offset);
  }
  // Merge adjacent dimensions across which every buffer is contiguous or broadcast.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(full.size());
  for (int d = 0; d < out.rank(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t j = 0; j < full.size() && merge; ++j) merge = strides[j].back() == full[j][static_cast<size_t>(d)] * out[d];
    if (merge) dims.back() *= out[d];
    else dims.push_back(out[d]);
    for (size_t j = 0; j < full.size(); ++j) {
      if (merge) strides[j].back() = full[j][static_cast<size_t>(d)];
      else strides[j].push_back(full[j][static_cast<size_t>(d)]);
    }
  }
  if (dims.size() > 2) {
    return Error("its iteration space " + out.to_string() + " does not collapse to two dimensions");
  }
  CellSpace s;
  const size_t n = dims.size();
  s.rows = n == 2 ? dims[0] : 1;
  s.cols = n >= 1 ? dims[n - 1] : 1;
  for (size_t j = 0; j < full.size(); ++j) {
    const CellLayout l{offsets[j], n == 2 ? strides[j][0] : 0, n >= 1 ? strides[j][n - 1] : 0};
    (j < body.inputs().size() ? s.operands : s.results).push_back(l);
  }
  return s;
}

StatusOr<std::vector<CellInstr>> cell_program(const Graph& g) {
  for (const Input& in : g.inputs()) {
    if (!is_f32(g, in.value)) return Error("a " + std::string(dtype_name(g.type(in.value).dtype)) + " operand");
  }
  for (ValueId out : g.outputs()) {
    if (!is_f32(g, out)) return Error("a " + std::string(dtype_name(g.type(out).dtype)) + " result");
  }
  for (const Node& n : g.nodes()) {
    if (const std::string why = node_refusal(g, n); !why.empty()) return Error(why);
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
    code.push_back({static_cast<uint16_t>(n.op), *dst, operands[0], operands[1], operands[2]});
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
