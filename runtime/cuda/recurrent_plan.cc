#include "runtime/cuda/recurrent_plan.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <optional>
#include <utility>

#include "ir/scan.h"
#include "runtime/binding.h"
#include "runtime/cuda/recurrent_cell.h"
#include "runtime/cuda/recurrent_reference.h"
#include "runtime/loop_slots.h"

namespace weft::cuda {

namespace {

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
    return refuse("invocation " + std::to_string(j) + " (" + invocation_kind(body_.code[j]) + "): " + why);
  }

  void bind_slots();
  StatusOr<int32_t> buffer(const SlotArgs& at, const std::string& what, DType dtype);
  Status add_invocation(size_t j);
  Status add_matmul(size_t j, const Node& node, const Type& a, const Type& b, const Type& c, const SlotArgs& pa,
                    const SlotArgs& pb, const SlotArgs& pc);
  Status add_elementwise(const std::string& what, const Graph& kernel, const std::vector<SlotArgs>& args,
                         bool row = false);
  // An elementwise phase over `count` elements in a row: buffer `src`'s element loaded and
  // stored into buffer `dst`'s.
  void add_flat_copy(int64_t count, int32_t src, int32_t dst);
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

StatusOr<int32_t> Planner::buffer(const SlotArgs& at, const std::string& what, DType dtype) {
  const std::optional<ElementType> type = element_type(dtype);
  WEFT_CHECK(type.has_value(), "persistent loop plan: a buffer of " + std::string(dtype_name(dtype)));
  // Iteration t runs slot t (slot length-1-t when reversed).
  const auto address = [&](int64_t t) {
    return reinterpret_cast<uint64_t>(at(reverse_ ? length_ - 1 - t : t));
  };
  StepAddress a;
  a.type = *type;
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
    // One entry per address and type: the body's arena may hold an f32 value and later
    // a bf16 one at the same offset (the memory plan reuses dead bytes), two entries.
    if (b.base == a.base && b.stride == a.stride && b.first == a.first && b.last == a.last && b.type == a.type) {
      return static_cast<int32_t>(i);
    }
  }
  buffers.push_back(a);
  return static_cast<int32_t>(buffers.size() - 1);
}

Status Planner::add_matmul(size_t j, const Node& node, const Type& a, const Type& b, const Type& c,
                           const SlotArgs& pa, const SlotArgs& pb, const SlotArgs& pc) {
  WEFT_CHECK(node.op == Op::Matmul, "persistent loop plan: a contraction that is not a matmul");
  if (!element_type(a.dtype) || !element_type(b.dtype) || !element_type(c.dtype)) {
    return refuse_at(j, "a matmul of " + std::string(dtype_name(a.dtype)) + " and " + std::string(dtype_name(b.dtype)) +
                            " into " + std::string(dtype_name(c.dtype)) + " (f32, bf16 and f16 only)");
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
  WEFT_ASSIGN_OR_RETURN(p.a, buffer(pa, what + "A", a.dtype));
  WEFT_ASSIGN_OR_RETURN(p.b, buffer(pb, what + "B", b.dtype));
  WEFT_ASSIGN_OR_RETURN(p.c, buffer(pc, what + "C", c.dtype));
  out_.program.phases.push_back(p);
  return Status::ok_status();
}

Status Planner::add_elementwise(const std::string& what, const Graph& kernel, const std::vector<SlotArgs>& args,
                                bool row) {
  StatusOr<CellSpace> space = row ? row_space(kernel) : cell_space(kernel);
  if (!space.ok()) return refuse(what + ": " + space.error().message);
  StatusOr<std::vector<CellInstr>> code = cell_program(kernel, row);
  if (!code.ok()) return refuse(what + ": " + code.error().message);
  WEFT_CHECK(args.size() == space->operands.size() + space->results.size(),
             "persistent loop plan: a kernel's arguments do not match its body");
  RecurrentPhase p;
  p.kind = row ? PhaseKind::row : PhaseKind::elementwise;
  p.rows = space->rows;
  p.cols = space->cols;
  p.first_map = static_cast<int32_t>(out_.program.maps.size());
  p.operand_count = static_cast<int32_t>(space->operands.size());
  p.result_count = static_cast<int32_t>(space->results.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const bool result = i >= space->operands.size();
    const CellLayout& l = result ? space->results[i - space->operands.size()] : space->operands[i];
    const ValueId value = result ? kernel.outputs()[i - space->operands.size()] : kernel.inputs()[i].value;
    WEFT_ASSIGN_OR_RETURN(int32_t b, buffer(args[i],
                                            what + "'s " + (result ? "result " : "operand ") +
                                                std::to_string(result ? i - space->operands.size() : i),
                                            kernel.type(value).dtype));
    out_.program.maps.push_back({b, l.offset, l.row_stride, l.col_stride});
  }
  p.first_instr = static_cast<int32_t>(out_.program.instrs.size());
  p.instr_count = static_cast<int32_t>(code->size());
  out_.program.instrs.insert(out_.program.instrs.end(), code->begin(), code->end());
  out_.program.phases.push_back(p);
  return Status::ok_status();
}

Status Planner::add_copy(const std::string& what, const SlotArgs& to, const SlotArgs& from, const Type& type) {
  if (!element_type(type.dtype)) {
    return refuse(what + ": a " + std::string(dtype_name(type.dtype)) + " copy (f32, bf16 and f16 only)");
  }
  bool same = true;
  for (int64_t s = 0; s < length_ && same; ++s) same = to(s) == from(s);
  if (same) return Status::ok_status();  // the bound loop skips it too
  WEFT_ASSIGN_OR_RETURN(int32_t src, buffer(from, what + "'s source", type.dtype));
  WEFT_ASSIGN_OR_RETURN(int32_t dst, buffer(to, what + "'s destination", type.dtype));
  add_flat_copy(type.numel(), src, dst);
  ++out_.copy_phases;
  return Status::ok_status();
}

void Planner::add_flat_copy(int64_t count, int32_t src, int32_t dst) {
  RecurrentPhase p;
  p.kind = PhaseKind::elementwise;
  p.rows = 1;
  p.cols = count;
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
      // A `full` is refused too: the lowering hoists every one out of a loop's body
      // (recurrent_plan.h).
      if (inv.node.op != Op::Matmul) return refuse_at(j, "only a matmul of the library ops runs in a persistent loop");
      return add_matmul(j, inv.node, inv.operands[0].type, inv.operands[1].type, inv.results[0].type,
                        site(j, false, 0), site(j, false, 1), site(j, true, 0));
    case Invocation::Kind::contraction: {
      const size_t c = static_cast<size_t>(inv.gemm_result);
      WEFT_RETURN_IF_ERROR(add_matmul(j, inv.node, inv.operands[0].type, inv.operands[1].type, inv.results[c].type,
                                      site(j, false, 0), site(j, false, 1), site(j, true, c)));
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
  const bool row = inv.kind == Invocation::Kind::generated && kernel.kind == FusedKind::row;
  if (inv.kind == Invocation::Kind::generated && kernel.kind != FusedKind::elementwise && !row) {
    return refuse_at(j, "kernel " + kernel.name + " is a " + std::string(fused_kind_name(kernel.kind)) + " kernel");
  }
  return add_elementwise(what + " (" + invocation_kind(inv) + " " + kernel.name + ")", kernel.body, args, row);
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
  // A next carry that is another carry's input would need the copies at once (a swap);
  // one that is a const or an xs (rotate-carry-casts' f32 carry, reset to its initial
  // value each iteration: passes/rotate_carry_casts.h) is copied like any other.
  for (int c = 0; c < carries_; ++c) {
    const BufferRef& next = body_.outputs[static_cast<size_t>(c)];
    const bool carry = next.space == Space::input && next.input >= consts_ && next.input < consts_ + carries_;
    if (carry && next.input != consts_ + c) return refuse("two carries are swapped");
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

std::optional<ElementType> element_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return ElementType::f32;
    case DType::bf16: return ElementType::bf16;
    case DType::f16: return ElementType::f16;
    default: return std::nullopt;
  }
}

}  // namespace weft::cuda
