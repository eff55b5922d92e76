// The Executor's checks ([Reliability]): the memory a Program needs against what the
// machine has (before anything is allocated), and check-numerics — the step run one
// invocation at a time with every float result scanned for NaN and infinity (executor.h).

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ir/text_util.h"
#include "runtime/binding.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/executor_bound.h"
#include "runtime/reference/interpreter.h"
#include "runtime/reference/numerics.h"

namespace weft::cpu {
namespace {

// MemAvailable from /proc/meminfo in bytes, or -1.
int64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return -1;
}

// The first non-finite element (its index in the whole buffer) of result `r` of a kernel
// of `body`, or -1. A result the body stores through a window (a pad ending it: a
// concat's part, passes/fold_concats.h) is the window's elements alone; the rest of the
// buffer is other kernels' (not written yet, or by an earlier step).
int64_t first_nonfinite_result(const void* data, const Type& type, const Graph* body, size_t r) {
  const int p = body && r < body->outputs().size() ? body->value(body->outputs()[r]).node : -1;
  if (p < 0 || body->node(p).op != Op::Pad) return reference::first_nonfinite(data, type);
  const Node& pad = body->node(p);
  const IntList& low = pad.ints_attr("low");
  const Shape& window = body->type(pad.operands[0]).shape;
  const Shape& dest = type.shape;
  if (!is_floating(type.dtype)) return -1;
  for (int64_t i = 0; i < dest.numel(); ++i) {
    bool inside = true;
    for (int64_t d = dest.rank() - 1, rest = i; d >= 0 && inside; rest /= dest[static_cast<int>(d)], --d) {
      const int64_t at = rest % dest[static_cast<int>(d)] - low[static_cast<size_t>(d)];
      inside = at >= 0 && at < window[static_cast<int>(d)];
    }
    if (inside && !std::isfinite(reference::element_value(data, type, i))) return i;
  }
  return -1;
}

}  // namespace

Status check_memory(const Program& program, const ExecutorOptions& options) {
  if (options.max_memory > 0) return weft::check_memory(program, options.max_memory, "the memory limit");
  return weft::check_memory(program, mem_available(), "MemAvailable");
}

Status Executor::run_checking_numerics() {
  for (size_t i = 0; i < program_.inputs.size(); ++i) {
    const Type& type = program_.inputs[i].type;
    const int64_t bad = reference::first_nonfinite(input_ptr_[i], type);
    if (bad >= 0) {
      return reference::nonfinite_error(nullptr, program_.inputs[i].name, type, bad,
                                        reference::element_value(input_ptr_[i], type, bad));
    }
  }
  for (size_t i = 0; i < code_.size(); ++i) {
    std::vector<Tensor> operands = operands_to_explain(i);
    WEFT_RETURN_IF_ERROR(run_invocation(i));
    WEFT_RETURN_IF_ERROR(check_invocation_numerics(i, std::move(operands)));
  }
  apply_updates();
  return Status::ok_status();
}

Status Executor::run_body_checking_numerics(ThreadPool& pool, const std::vector<std::unique_ptr<Bound>>& code,
                                            int64_t slot) {
  // The checks resolve buffers as this slot's code is bound: its consts and xs in the
  // parent's buffers, its ys slots and chained carries (runtime/loop_slots.h).
  const std::vector<void*> own = input_ptr_;
  if (slot >= 0 && static_cast<size_t>(slot) < slot_bindings_.size()) {
    input_ptr_ = slot_input_ptrs(static_cast<size_t>(slot));
    checked_patches_ = &slot_bindings_[static_cast<size_t>(slot)].patches;
  }
  Status status;
  for (size_t i = 0; i < code.size() && status.ok(); ++i) {
    std::vector<Tensor> operands = operands_to_explain(i);
    status = code[i]->run(pool);
    if (status.ok()) status = check_invocation_numerics(i, std::move(operands));
  }
  input_ptr_ = own;
  checked_patches_ = nullptr;
  return status;
}

std::vector<Tensor> Executor::operands_to_explain(size_t index) const {
  // A generated kernel may write over an operand (in place): keep its operands, in case
  // its body must be searched for the culprit.
  std::vector<Tensor> operands;
  const Invocation& inv = program_.code[index];
  if (inv.kind != Invocation::Kind::generated && inv.kind != Invocation::Kind::contraction) return operands;
  for (size_t k = 0; k < inv.operands.size(); ++k) {
    Tensor t(inv.operands[k].type);
    std::memcpy(t.raw_data(), address(index, /*result=*/false, k), t.bytes());
    operands.push_back(std::move(t));
  }
  return operands;
}

Status Executor::check_invocation_numerics(size_t index, std::vector<Tensor> operands) {
  const Invocation& inv = program_.code[index];
  if (inv.kind == Invocation::Kind::copy) return Status::ok_status();  // moves bytes only
  // A bucketed all_reduce's result is written when its bucket is reduced (executor.h).
  if (bucketed_all_reduce_ && inv.node.op == Op::AllReduce) return Status::ok_status();
  for (size_t r = 0; r < inv.results.size(); ++r) {
    const BufferRef& ref = inv.results[r];
    const void* data = address(index, /*result=*/true, r);
    const Graph* body = inv.kind == Invocation::Kind::generated ? &program_.kernels[inv.kernel].body : nullptr;
    const int64_t bad = first_nonfinite_result(data, ref.type, body, r);
    if (bad < 0) continue;
    // An AOT Program carries its kernels as object code, without their bodies: the
    // search inside a body is skipped then, and the kernel itself is named.
    const bool has_body = (inv.kind == Invocation::Kind::contraction || inv.kind == Invocation::Kind::generated) &&
                          !program_.kernels[inv.kernel].body.nodes().empty();
    if (inv.kind == Invocation::Kind::contraction) {
      // The GEMM, then its epilogue: which produced it? C = A·B on the reference
      // interpreter from the operands as they were, then the epilogue's body on C.
      Graph gemm("gemm");
      const ValueId a = gemm.add_input("a", inv.operands[0].type);
      const ValueId b = gemm.add_input("b", inv.operands[1].type);
      const Type c_type = inv.results[inv.gemm_result].type;
      gemm.add_output(gemm.add_node(inv.node.op, {a, b}, inv.node.attrs, inv.node.loc, c_type, "c"));
      WEFT_ASSIGN_OR_RETURN(reference::RunResult c, reference::run(gemm, {operands[0], operands[1]}));
      const std::string where = " inside the fused kernel computing %" + inv.label;
      const int64_t bad_c = reference::first_nonfinite(c.outputs[0]);
      if (bad_c >= 0) {
        Error e = reference::nonfinite_error(&inv.node, "", c_type, bad_c, c.outputs[0].get_double(bad_c));
        e.message += where;
        return e;
      }
      if (has_body) {
        std::vector<Tensor> epilogue_inputs;
        epilogue_inputs.push_back(std::move(c.outputs[0]));
        for (size_t k = 2; k < operands.size(); ++k) epilogue_inputs.push_back(std::move(operands[k]));
        const Graph& body = program_.kernels[inv.kernel].body;
        WEFT_ASSIGN_OR_RETURN(std::optional<reference::NonFinite> found,
                              reference::find_nonfinite(body, std::move(epilogue_inputs)));
        if (found && found->node >= 0) {
          Error e = reference::nonfinite_error(&body.nodes()[found->node], "", found->type, found->index,
                                               found->element);
          e.message += where;
          return e;
        }
      }
    } else if (inv.kind == Invocation::Kind::generated && has_body) {
      // Which node of the kernel's body? Its operands were finite (checked before), so
      // the reference interpreter, run on them node by node, finds it.
      const Graph& body = program_.kernels[inv.kernel].body;
      WEFT_ASSIGN_OR_RETURN(std::optional<reference::NonFinite> found,
                            reference::find_nonfinite(body, std::move(operands)));
      if (found && found->node >= 0) {
        // Body values have the kernel's own names: name the kernel's result instead.
        Error e = reference::nonfinite_error(&body.nodes()[found->node], "", found->type,
                                             found->index, found->element);
        e.message += " inside the fused kernel computing %" + inv.label;
        return e;
      }
    }
    return reference::nonfinite_error(&inv.node, inv.label, ref.type, bad,
                                      reference::element_value(data, ref.type, bad));
  }
  return Status::ok_status();
}

}  // namespace weft::cpu
