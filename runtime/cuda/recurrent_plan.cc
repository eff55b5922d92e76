#include "runtime/cuda/recurrent_plan.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <utility>

#include "ir/scan.h"
#include "runtime/binding.h"
#include "runtime/cuda/recurrent_reference.h"
#include "runtime/loop_slots.h"

namespace weft::cuda {

RecurrentProgramView RecurrentProgram::view() const {
  RecurrentProgramView v;
  v.length = length;
  v.buffer_count = static_cast<int32_t>(buffers.size());
  v.phase_count = static_cast<int32_t>(phases.size());
  v.map_count = static_cast<int32_t>(maps.size());
  v.instr_count = static_cast<int32_t>(instrs.size());
  v.buffers = buffers.data();
  v.phases = phases.data();
  v.maps = maps.data();
  v.instrs = instrs.data();
  return v;
}

namespace {

std::string hex(uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

std::string instr_text(const CellInstr& in) {
  if (in.op == kLoadOp) return "r" + std::to_string(in.dst) + " = load operand " + std::to_string(in.a);
  if (in.op == kStoreOp) return "store result " + std::to_string(in.a) + " = r" + std::to_string(in.b);
  const Op op = static_cast<Op>(in.op);
  std::string s = "r" + std::to_string(in.dst) + " = " + std::string(op_name(op)) + " r" + std::to_string(in.a);
  const int arity = recurrent_op_arity(op);
  if (arity > 1) s += " r" + std::to_string(in.b);
  if (arity > 2) s += " r" + std::to_string(in.c);
  return s;
}

std::string map_text(const ElementMap& m) {
  return "b" + std::to_string(m.buffer) + "+" + std::to_string(m.offset) + " [" + std::to_string(m.row_stride) + "," +
         std::to_string(m.col_stride) + "]";
}

}  // namespace

std::string RecurrentProgram::to_string() const {
  std::string s = "persistent loop: " + std::to_string(length) + " iterations, " + std::to_string(phases.size()) +
                  " phases\n";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const StepAddress& b = buffers[i];
    s += "  b" + std::to_string(i) + " " + hex(b.base) + " + t*" + std::to_string(b.stride);
    if (b.first != 0) s += ", first " + hex(b.first);
    if (b.last != 0) s += ", last " + hex(b.last);
    s += "\n";
  }
  for (size_t i = 0; i < phases.size(); ++i) {
    const RecurrentPhase& p = phases[i];
    s += "  phase " + std::to_string(i) + ": ";
    if (p.kind == PhaseKind::matmul) {
      s += "matmul b" + std::to_string(p.c) + "[" + std::to_string(p.m) + "," + std::to_string(p.n) + "] = b" +
           std::to_string(p.a) + (p.transpose_a ? "^T" : "") + " * b" + std::to_string(p.b) +
           (p.transpose_b ? "^T" : "") + " (k " + std::to_string(p.k) + ", ld " + std::to_string(p.lda) + "," +
           std::to_string(p.ldb) + "," + std::to_string(p.ldc) + ")\n";
      continue;
    }
    s += "elementwise " + std::to_string(p.rows) + "x" + std::to_string(p.cols) + "\n";
    for (int32_t j = 0; j < p.operand_count + p.result_count; ++j) {
      s += std::string("    ") + (j < p.operand_count ? "operand " : "result ") +
           std::to_string(j < p.operand_count ? j : j - p.operand_count) + ": " +
           map_text(maps[static_cast<size_t>(p.first_map + j)]) + "\n";
    }
    for (int32_t j = 0; j < p.instr_count; ++j) {
      s += "    " + instr_text(instrs[static_cast<size_t>(p.first_instr + j)]) + "\n";
    }
  }
  return s;
}

namespace {

// ---- A kernel's iteration space in two dimensions (codegen's collapse_space, whose rule
// this follows: runtime/ may not depend on codegen/, DESIGN.md decision 10).

// An element map without its buffer: offset and strides in elements.
struct Layout {
  int64_t offset = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

struct Space2 {
  int64_t rows = 1, cols = 1;
  std::vector<Layout> operands, results;
};

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

// The space of `body`'s elements, or why it has no two-dimensional one.
StatusOr<Space2> collapse_2d(const Graph& body) {
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
  Space2 s;
  const size_t n = dims.size();
  s.rows = n == 2 ? dims[0] : 1;
  s.cols = n >= 1 ? dims[n - 1] : 1;
  for (size_t j = 0; j < full.size(); ++j) {
    const Layout l{offsets[j], n == 2 ? strides[j][0] : 0, n >= 1 ? strides[j][n - 1] : 0};
    (j < body.inputs().size() ? s.operands : s.results).push_back(l);
  }
  return s;
}

// ---- A kernel's body as a register program.

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

StatusOr<std::vector<CellInstr>> compile_kernel(const Graph& g) {
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

// ---- The loop.

using SlotArgs = std::function<const void*(int64_t slot)>;

// One loop's program under construction.
class Planner {
 public:
  Planner(const Program& root, const Invocation& loop, const LoopAddresses& where)
      : root_(root), loop_(loop), body_(root.bodies[static_cast<size_t>(loop.body)]), where_(where) {}

  StatusOr<RecurrentPlan> plan();

 private:
  Error refuse(const std::string& why) const { return Error("persistent loop @" + body_.name + ": " + why); }
  Error refuse_at(size_t j, const std::string& why) const {
    return refuse("invocation " + std::to_string(j) + " (" + kind_label(body_.code[j]) + "): " + why);
  }
  static std::string kind_label(const Invocation& inv);

  void bind_slots();
  StatusOr<int32_t> buffer(const SlotArgs& at, const std::string& what);
  Status add_invocation(size_t j);
  Status add_matmul(size_t j, const Node& node, const Type& a, const Type& b, const SlotArgs& pa, const SlotArgs& pb,
                    const SlotArgs& pc);
  Status add_elementwise(const std::string& what, const Graph& kernel, const std::vector<SlotArgs>& args);
  Status add_copy(const std::string& what, const SlotArgs& to, const SlotArgs& from, const Type& type);
  Status add_iteration_copies();
  void add_edge_copies();

  // Slot s's address of body invocation j's operand (result false) or result k.
  SlotArgs site(size_t j, bool result, size_t k) const {
    return [this, j, result, k](int64_t s) -> const void* {
      const InvocationBuffers& b = slots_[static_cast<size_t>(s)].code[j];
      return result ? b.results[k] : b.in[k];
    };
  }

  struct Slot {
    std::vector<InvocationBuffers> code;  // each invocation's buffers, patched
    std::vector<const void*> out;         // where each body output lies
    std::vector<const void*> carries;     // LoopSlotBinding::carries
    std::vector<void*> inputs;            // the body's inputs as this slot reads them
  };

  const Program& root_;
  const Invocation& loop_;
  const Program& body_;
  const LoopAddresses& where_;
  int64_t length_ = 0;
  bool reverse_ = false;
  int consts_ = 0, carries_ = 0;
  LoopSlots slots_plan_;
  std::vector<Slot> slots_;
  RecurrentPlan out_;
};

std::string Planner::kind_label(const Invocation& inv) {
  switch (inv.kind) {
    case Invocation::Kind::generated: return "generated";
    case Invocation::Kind::contraction: return "contraction";
    case Invocation::Kind::copy: return "copy";
    case Invocation::Kind::loop: return "loop";
    case Invocation::Kind::library: return "library " + std::string(op_name(inv.node.op));
  }
  return "?";
}

void Planner::bind_slots() {
  Program laid = body_;
  if (laid.input_offsets.empty()) lay_out_inputs_in_order(laid);
  const size_t consts = static_cast<size_t>(loop_.node.int_attr("consts"));
  std::vector<void*> own;  // the body's inputs where the loop binds them (bind.cc's body_in_)
  for (size_t k = 0; k < body_.inputs.size(); ++k) {
    own.push_back(k < consts ? const_cast<void*>(where_.in[k])
                             : static_cast<std::byte*>(where_.body_inputs) + laid.input_offsets[k]);
  }
  for (int64_t i = 0; i < length_; ++i) {
    const LoopSlotBinding s = bind_loop_slot(slots_plan_, body_, loop_, where_.in, where_.results, i);
    Slot slot;
    slot.inputs = own;
    for (size_t k = 0; k < own.size(); ++k) {
      if (s.inputs[k] != nullptr) slot.inputs[k] = const_cast<void*>(s.inputs[k]);
    }
    const auto at = [&](const BufferRef& r) { return buffer_address(r, where_.body_arena, slot.inputs); };
    for (size_t j = 0; j < body_.code.size(); ++j) {
      InvocationBuffers b = resolve_buffers(body_.code[j], at);
      apply_slot_patches(s.patches, j, b);
      slot.code.push_back(std::move(b));
    }
    for (size_t o = 0; o < body_.outputs.size(); ++o) {
      slot.out.push_back(s.outputs[o] != nullptr ? s.outputs[o] : at(body_.outputs[o]));
    }
    slot.carries = s.carries;
    slots_.push_back(std::move(slot));
  }
}

StatusOr<int32_t> Planner::buffer(const SlotArgs& at, const std::string& what) {
  // Iteration t runs slot t (slot length-1-t when reversed).
  const auto address = [&](int64_t t) {
    return reinterpret_cast<uint64_t>(at(reverse_ ? length_ - 1 - t : t));
  };
  StepAddress a;
  if (length_ >= 4) {  // two inner iterations fix the stride
    a.stride = static_cast<int64_t>(address(2) - address(1));
    a.base = address(1) - static_cast<uint64_t>(a.stride);
  } else {
    a.base = address(0);
    a.stride = length_ >= 2 ? static_cast<int64_t>(address(1) - address(0)) : 0;
  }
  if (address(0) != a.base) a.first = address(0);
  if (length_ >= 2 && address(length_ - 1) != a.base + static_cast<uint64_t>((length_ - 1) * a.stride)) {
    a.last = address(length_ - 1);
  }
  for (int64_t t = 0; t < length_; ++t) {
    if (step_address(a, t, length_) != address(t)) {
      return refuse(what + " moves by no fixed stride across the iterations (iteration " + std::to_string(t) + ")");
    }
  }
  std::vector<StepAddress>& buffers = out_.program.buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const StepAddress& b = buffers[i];
    if (b.base == a.base && b.stride == a.stride && b.first == a.first && b.last == a.last) {
      return static_cast<int32_t>(i);
    }
  }
  buffers.push_back(a);
  return static_cast<int32_t>(buffers.size() - 1);
}

Status Planner::add_matmul(size_t j, const Node& node, const Type& a, const Type& b, const SlotArgs& pa,
                           const SlotArgs& pb, const SlotArgs& pc) {
  WEFT_CHECK(node.op == Op::Matmul, "persistent loop plan: a contraction that is not a matmul");
  if (a.dtype != DType::f32 || b.dtype != DType::f32) {
    return refuse_at(j, "a matmul of " + std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)) +
                            " (f32 only)");
  }
  if (a.shape.rank() != 2 || b.shape.rank() != 2) {
    return refuse_at(j, "a matmul of " + a.to_string() + " and " + b.to_string() + " (two dimensions only)");
  }
  RecurrentPhase p;
  p.kind = PhaseKind::matmul;
  p.transpose_a = node.bool_attr("transpose_a");
  p.transpose_b = node.bool_attr("transpose_b");
  p.m = p.transpose_a ? a.shape[1] : a.shape[0];
  p.k = p.transpose_a ? a.shape[0] : a.shape[1];
  p.n = p.transpose_b ? b.shape[0] : b.shape[1];
  p.lda = a.shape[1];
  p.ldb = b.shape[1];
  p.ldc = p.n;
  const std::string what = "invocation " + std::to_string(j) + "'s ";
  WEFT_ASSIGN_OR_RETURN(p.a, buffer(pa, what + "A"));
  WEFT_ASSIGN_OR_RETURN(p.b, buffer(pb, what + "B"));
  WEFT_ASSIGN_OR_RETURN(p.c, buffer(pc, what + "C"));
  out_.program.phases.push_back(p);
  return Status::ok_status();
}

Status Planner::add_elementwise(const std::string& what, const Graph& kernel, const std::vector<SlotArgs>& args) {
  StatusOr<Space2> space = collapse_2d(kernel);
  if (!space.ok()) return refuse(what + ": " + space.error().message);
  StatusOr<std::vector<CellInstr>> code = compile_kernel(kernel);
  if (!code.ok()) return refuse(what + ": " + code.error().message);
  WEFT_CHECK(args.size() == space->operands.size() + space->results.size(),
             "persistent loop plan: a kernel's arguments do not match its body");
  RecurrentPhase p;
  p.kind = PhaseKind::elementwise;
  p.rows = space->rows;
  p.cols = space->cols;
  p.first_map = static_cast<int32_t>(out_.program.maps.size());
  p.operand_count = static_cast<int32_t>(space->operands.size());
  p.result_count = static_cast<int32_t>(space->results.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const bool result = i >= space->operands.size();
    const Layout& l = result ? space->results[i - space->operands.size()] : space->operands[i];
    WEFT_ASSIGN_OR_RETURN(int32_t b, buffer(args[i], what + "'s " + (result ? "result " : "operand ") +
                                                          std::to_string(result ? i - space->operands.size() : i)));
    out_.program.maps.push_back({b, l.offset, l.row_stride, l.col_stride});
  }
  p.first_instr = static_cast<int32_t>(out_.program.instrs.size());
  p.instr_count = static_cast<int32_t>(code->size());
  out_.program.instrs.insert(out_.program.instrs.end(), code->begin(), code->end());
  out_.program.phases.push_back(p);
  return Status::ok_status();
}

Status Planner::add_copy(const std::string& what, const SlotArgs& to, const SlotArgs& from, const Type& type) {
  if (type.dtype != DType::f32) return refuse(what + ": a " + std::string(dtype_name(type.dtype)) + " copy (f32 only)");
  bool same = true;
  for (int64_t s = 0; s < length_ && same; ++s) same = to(s) == from(s);
  if (same) return Status::ok_status();  // the bound loop skips it too
  WEFT_ASSIGN_OR_RETURN(int32_t src, buffer(from, what + "'s source"));
  WEFT_ASSIGN_OR_RETURN(int32_t dst, buffer(to, what + "'s destination"));
  RecurrentPhase p;
  p.kind = PhaseKind::elementwise;
  p.rows = 1;
  p.cols = type.numel();
  p.first_map = static_cast<int32_t>(out_.program.maps.size());
  p.operand_count = 1;
  p.result_count = 1;
  out_.program.maps.push_back({src, 0, 0, 1});
  out_.program.maps.push_back({dst, 0, 0, 1});
  p.first_instr = static_cast<int32_t>(out_.program.instrs.size());
  p.instr_count = 2;
  out_.program.instrs.push_back({kLoadOp, 0, 0, 0, 0});
  out_.program.instrs.push_back({kStoreOp, 0, 0, 0, 0});
  out_.program.phases.push_back(p);
  ++out_.copy_phases;
  return Status::ok_status();
}

Status Planner::add_invocation(size_t j) {
  const Invocation& inv = body_.code[j];
  if (!inv.clear.empty()) return refuse_at(j, "it clears buffers before it runs");
  const std::string what = "invocation " + std::to_string(j);
  std::vector<SlotArgs> args;
  switch (inv.kind) {
    case Invocation::Kind::loop: return refuse_at(j, "a nested loop");
    case Invocation::Kind::copy: return add_copy(what, site(j, true, 0), site(j, false, 0), inv.results[0].type);
    case Invocation::Kind::library:
      if (inv.node.op != Op::Matmul) return refuse_at(j, "only a matmul of the library ops runs in a persistent loop");
      return add_matmul(j, inv.node, inv.operands[0].type, inv.operands[1].type, site(j, false, 0), site(j, false, 1),
                        site(j, true, 0));
    case Invocation::Kind::contraction: {
      const size_t c = static_cast<size_t>(inv.gemm_result);
      WEFT_RETURN_IF_ERROR(add_matmul(j, inv.node, inv.operands[0].type, inv.operands[1].type, site(j, false, 0),
                                      site(j, false, 1), site(j, true, c)));
      // The epilogue's buffers (InvocationBuffers::epilogue_args): C, the operands after
      // A and B, the results (all of them when C is results[0], overwritten in place).
      args.push_back(site(j, true, c));
      for (size_t k = 2; k < inv.operands.size(); ++k) args.push_back(site(j, false, k));
      for (size_t r = 0; r < inv.results.size(); ++r) {
        if (c == 0 || r != c) args.push_back(site(j, true, r));
      }
      break;
    }
    case Invocation::Kind::generated:
      for (size_t k = 0; k < inv.operands.size(); ++k) args.push_back(site(j, false, k));
      for (size_t r = 0; r < inv.results.size(); ++r) args.push_back(site(j, true, r));
      break;
  }
  const GeneratedKernel& kernel = root_.kernels[static_cast<size_t>(inv.kernel)];
  if (inv.kind == Invocation::Kind::generated && kernel.kind != FusedKind::elementwise) {
    return refuse_at(j, "kernel " + kernel.name + " is a " + std::string(fused_kind_name(kernel.kind)) + " kernel");
  }
  return add_elementwise(what + " (" + kind_label(inv) + " " + kernel.name + ")", kernel.body, args);
}

StatusOr<RecurrentPlan> Planner::plan() {
  length_ = loop_.node.int_attr("length");
  reverse_ = loop_.node.bool_attr("reverse");
  consts_ = static_cast<int>(loop_.node.int_attr("consts"));
  carries_ = static_cast<int>(loop_.node.int_attr("carries"));
  if (scan_exit(loop_.node).any()) return refuse("the loop has an early exit (stop or active)");
  WEFT_CHECK(length_ >= 1, "persistent loop plan: a loop of no iteration");  // the verifier's
  if (loop_slot_bindings(loop_, body_) != length_) {
    return refuse("the loop is bound once for all its iterations (runtime/loop_slots.h), not per slot");
  }
  for (int c = 0; c < carries_; ++c) {
    const BufferRef& next = body_.outputs[static_cast<size_t>(c)];
    if (next.space == Space::input && next.input != consts_ + c) return refuse("two carries are swapped");
  }
  slots_plan_ = plan_loop_slots(body_, loop_, where_.in, where_.results);
  bind_slots();
  out_.program.length = length_;
  out_.body_invocations = static_cast<int>(body_.code.size());
  for (size_t j = 0; j < body_.code.size(); ++j) WEFT_RETURN_IF_ERROR(add_invocation(j));
  WEFT_RETURN_IF_ERROR(add_iteration_copies());
  add_edge_copies();
  WEFT_RETURN_IF_ERROR(check_recurrent_program(out_.program.view()));
  return std::move(out_);
}

Status Planner::add_iteration_copies() {
  // What the slot plan leaves to copy per iteration (bind.cc's LoopBound): the ys first
  // (one may be a carry's current value), then each next carry not chained nor in place.
  for (size_t y = static_cast<size_t>(carries_); y < body_.outputs.size(); ++y) {
    const size_t bytes = body_.outputs[y].type.bytes();
    const SlotArgs to = [this, y, bytes](int64_t s) -> const void* {
      return static_cast<const std::byte*>(where_.results[y]) + s * static_cast<int64_t>(bytes);
    };
    const SlotArgs from = [this, y](int64_t s) { return slots_[static_cast<size_t>(s)].out[y]; };
    WEFT_RETURN_IF_ERROR(add_copy("the copy of ys " + std::to_string(y), to, from, body_.outputs[y].type));
  }
  for (size_t c = 0; c < static_cast<size_t>(carries_); ++c) {
    if (slots_plan_.chained(static_cast<int>(c))) continue;
    const size_t k = static_cast<size_t>(consts_) + c;
    const SlotArgs to = [this, k](int64_t s) -> const void* { return slots_[static_cast<size_t>(s)].inputs[k]; };
    const SlotArgs from = [this, c](int64_t s) { return slots_[static_cast<size_t>(s)].out[c]; };
    WEFT_RETURN_IF_ERROR(add_copy("the copy of carry " + std::to_string(c), to, from, body_.outputs[c].type));
  }
  return Status::ok_status();
}

void Planner::add_edge_copies() {
  // The initial carries before the first iteration, the last ones into the loop's results
  // after the last (bind.cc's LoopBound::run).
  const Slot& first = slots_[static_cast<size_t>(reverse_ ? length_ - 1 : 0)];
  const Slot& last = slots_[static_cast<size_t>(reverse_ ? 0 : length_ - 1)];
  for (size_t c = 0; c < static_cast<size_t>(carries_); ++c) {
    const bool chained = slots_plan_.chained(static_cast<int>(c));
    const size_t k = static_cast<size_t>(consts_) + c;
    const size_t bytes = body_.outputs[c].type.bytes();
    void* to = chained ? const_cast<void*>(first.carries[c]) : first.inputs[k];
    if (to != where_.in[k]) out_.before.push_back({to, where_.in[k], bytes});
    const void* from = chained ? last.out[c] : last.inputs[k];
    if (from != where_.results[c]) out_.after.push_back({where_.results[c], from, bytes});
  }
}

}  // namespace

StatusOr<RecurrentPlan> plan_recurrent_loop(const Program& root, const Invocation& loop, const LoopAddresses& where) {
  WEFT_CHECK(loop.kind == Invocation::Kind::loop, "plan_recurrent_loop: not a loop invocation");
  return Planner(root, loop, where).plan();
}

}  // namespace weft::cuda
