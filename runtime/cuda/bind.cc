// Binding a Program's invocations to device buffers (Binder, device.h), and the loop
// invocation: a body Program bound per slot (runtime/loop_slots.h), run `length` times on
// the step's stream; or, with WEFT_PERSISTENT_LOOPS=1, one persistent launch for all its
// iterations where the loop allows (persistent_loop.h).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "runtime/ab_switch.h"
#include "runtime/binding.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/library.h"
#include "runtime/cuda/persistent_loop.h"

namespace weft::cuda {
namespace {

using Device = Executor::Device;

// A loop (runtime/program.h). Its body has an arena and an inputs block of its own on the
// device, bound once per slot as runtime/loop_slots.h plans it: each slot's code reads the
// loop's consts and its slot of each xs where they lie in the parent, writes the ys it
// can straight into their slot and reads the carries chained to a ys in the previous
// slot. Per iteration the body's invocations run, then what the plan leaves is copied:
// each other ys into its slot, each next carry into its carry input unless the body wrote
// it there (the lowering's carries_assigned) or it is chained. Past loop_slot_bindings'
// bound, the body is bound once and each iteration's xs are copied in too. All
// device-to-device on the step's stream, so a captured step holds the whole loop and no
// host decides anything. Its fields are set by bind_loop, below.
struct LoopBound : Executor::Bound {
  ~LoopBound() override {
    for (void* p : {arena_, inputs_, stage_}) {
      if (p != nullptr) cudaFree(p);
    }
  }

  // One binding of the body: its code, the index each invocation runs with, where its
  // outputs lie and where it reads its chained carries.
  struct Slot {
    std::vector<BoundPtr> code;
    std::vector<int> index;
    std::vector<const void*> out;
    std::vector<const void*> carries;
  };

  Status run(Device& d, int) override {
    // A carry chained to a ys is read in place by the first iteration; a shifted one
    // starts in its ys's first slot.
    const Slot& first = slots_[slots_.size() == 1 ? 0 : static_cast<size_t>(reverse_ ? length_ - 1 : 0)];
    for (int c = 0; c < carries_; ++c) {
      void* to = plan_.chained(c) ? const_cast<void*>(first.carries[c]) : body_in_[consts_ + c];
      WEFT_RETURN_IF_ERROR(copy(d, to, in_[consts_ + c], out_bytes_[c], "initial carry"));
    }
    for (int64_t step = 0; step < length_; ++step) {
      const int64_t i = reverse_ ? length_ - 1 - step : step;
      const Slot& slot = slots_[slots_.size() == 1 ? 0 : static_cast<size_t>(i)];
      if (slots_.size() == 1) {  // bound once: the xs are copied in
        for (size_t k = consts_ + carries_; k < in_.size(); ++k) {
          WEFT_RETURN_IF_ERROR(copy(d, body_in_[k], static_cast<const std::byte*>(in_[k]) + i * in_bytes_[k],
                                    in_bytes_[k], "slot of xs"));
        }
      }
      for (size_t j = 0; j < slot.code.size(); ++j) WEFT_RETURN_IF_ERROR(slot.code[j]->run(d, slot.index[j]));
      // The ys first: one may be a carry's current value. A ys written in its slot is there.
      for (size_t y = carries_; y < results_.size(); ++y) {
        WEFT_RETURN_IF_ERROR(copy(d, static_cast<std::byte*>(results_[y]) + i * out_bytes_[y], slot.out[y],
                                  out_bytes_[y], "ys into its slot"));
      }
      if (stage_ != nullptr) {  // two carries swapped: read both before writing either
        size_t at = 0;
        for (int c = 0; c < carries_; ++c) {
          WEFT_RETURN_IF_ERROR(copy(d, static_cast<std::byte*>(stage_) + at, slot.out[c], out_bytes_[c], "staged carry"));
          at += out_bytes_[c];
        }
        at = 0;
        for (int c = 0; c < carries_; ++c) {
          WEFT_RETURN_IF_ERROR(copy(d, body_in_[consts_ + c], static_cast<std::byte*>(stage_) + at, out_bytes_[c],
                                    "staged carry"));
          at += out_bytes_[c];
        }
      } else {
        for (int c = 0; c < carries_; ++c) {
          if (plan_.chained(c)) continue;  // the next slot reads it where it is
          WEFT_RETURN_IF_ERROR(copy(d, body_in_[consts_ + c], slot.out[c], out_bytes_[c], "next carry"));
        }
      }
    }
    // A chained carry's last value is in the last iteration's slot; a shifted one's is in
    // the result already.
    const Slot& last = slots_[slots_.size() == 1 ? 0 : static_cast<size_t>(reverse_ ? 0 : length_ - 1)];
    for (int c = 0; c < carries_; ++c) {
      const void* from = plan_.chained(c) ? last.out[c] : body_in_[consts_ + c];
      WEFT_RETURN_IF_ERROR(copy(d, results_[c], from, out_bytes_[c], "last carry"));
    }
    return Status::ok_status();
  }

  std::string describe() const override {
    return "loop " + std::to_string(length_) + "x over @" + name_ + " (" + std::to_string(slots_[0].code.size()) +
           " invocations, " + (slots_.size() == 1 && length_ > 1 ? "bound once" : "bound per slot") +
           "; copies per iteration: " + std::to_string(copies_.calls) + " of " + std::to_string(copies_.bytes) +
           " bytes)" + (not_persistent_.empty() ? "" : "; not persistent: " + not_persistent_);
  }
  size_t workspace_bytes() const override {
    size_t most = 0;
    for (const Slot& s : slots_) {
      for (const BoundPtr& b : s.code) most = std::max(most, b->workspace_bytes());
    }
    return most;
  }
  size_t owned_bytes() const override {
    size_t bytes = owned_;
    for (const Slot& s : slots_) {
      for (const BoundPtr& b : s.code) bytes += b->owned_bytes();
    }
    return bytes;
  }
  bool on_host() const override {
    return std::any_of(slots_[0].code.begin(), slots_[0].code.end(), [](const BoundPtr& b) { return b->on_host(); });
  }

  static Status copy(Device& d, void* to, const void* from, size_t bytes, const char* what) {
    if (to == from || bytes == 0) return Status::ok_status();
    return cuda_status(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, d.stream),
                       std::string("cudaMemcpyAsync (loop: ") + what + ")");
  }

  std::string name_;
  int64_t length_ = 0;
  int consts_ = 0, carries_ = 0;
  bool reverse_ = false;
  void* arena_ = nullptr;   // the body's arena
  void* inputs_ = nullptr;  // the body's inputs block
  void* stage_ = nullptr;   // the carries, when two are swapped
  size_t owned_ = 0;
  std::vector<const void*> in_;  // the loop's operands in the parent
  std::vector<void*> results_;   // the loop's results in the parent
  std::vector<void*> body_in_;   // the body's inputs (its consts: the parent's operands)
  std::vector<size_t> in_bytes_, out_bytes_;  // a body input's and output's bytes
  LoopSlots plan_;                            // runtime/loop_slots.h
  LoopCopies copies_;                         // per iteration (describe())
  std::vector<Slot> slots_;  // one per slot, or one for every iteration (loop_slot_bindings)
  std::string not_persistent_;  // why WEFT_PERSISTENT_LOOPS=1 did not make it one launch
};

}  // namespace

StatusOr<BoundPtr> bind_loop(Binder& binder, const Invocation& inv, std::vector<const void*> in,
                             std::vector<void*> results) {
  std::string not_persistent;
  if (switched_on("WEFT_PERSISTENT_LOOPS")) {  // opt-in until a GPU measures it (#31)
    WEFT_ASSIGN_OR_RETURN(PersistentLoop persistent, persistent_loop_bound(binder.d, binder.root, inv, in, results));
    if (persistent.bound) return std::move(persistent.bound);
    not_persistent = std::move(persistent.refusal);
  }
  Program body = binder.root.bodies[static_cast<size_t>(inv.body)];
  check_layout(body, "cuda::Executor (loop body)");
  auto loop = std::make_unique<LoopBound>();
  LoopBound& l = *loop;
  l.name_ = body.name;
  l.not_persistent_ = std::move(not_persistent);
  l.length_ = inv.node.int_attr("length");
  l.consts_ = static_cast<int>(inv.node.int_attr("consts"));
  l.carries_ = static_cast<int>(inv.node.int_attr("carries"));
  l.reverse_ = inv.node.bool_attr("reverse");
  l.in_ = std::move(in);
  l.results_ = std::move(results);
  const std::string what = "loop body @" + body.name;
  WEFT_RETURN_IF_ERROR(device_allocate(l.arena_, body.arena_bytes, "arena of " + what));
  WEFT_RETURN_IF_ERROR(device_allocate(l.inputs_, body.inputs_bytes, "inputs block of " + what));
  l.owned_ = static_cast<size_t>(loop_body_bytes(body));  // device_memory.h
  for (size_t k = 0; k < body.inputs.size(); ++k) {
    l.in_bytes_.push_back(body.inputs[k].type.bytes());
    l.body_in_.push_back(static_cast<int>(k) < l.consts_
                             ? const_cast<void*>(l.in_[k])
                             : static_cast<std::byte*>(l.inputs_) + body.input_offsets[k]);
  }
  for (const BufferRef& out : body.outputs) l.out_bytes_.push_back(out.type.bytes());
  l.plan_ = plan_loop_slots(body, inv, l.in_, l.results_);
  l.copies_ = loop_copies_per_iteration(l.plan_, body, inv);
  for (int64_t i = 0, n = loop_slot_bindings(inv, body); i < n; ++i) {
    const LoopSlotBinding s = bind_loop_slot(l.plan_, body, inv, l.in_, l.results_, i);
    std::vector<void*> inputs = l.body_in_;
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (s.inputs[k] != nullptr) inputs[k] = const_cast<void*>(s.inputs[k]);
    }
    LoopBound::Slot slot;
    WEFT_ASSIGN_OR_RETURN(slot.code, binder.bind(body, l.arena_, inputs, &slot.index, s.patches));
    for (size_t o = 0; o < body.outputs.size(); ++o) {
      const BufferRef& out = body.outputs[o];
      slot.out.push_back(s.outputs[o] != nullptr ? s.outputs[o] : buffer_address(out, l.arena_, inputs));
    }
    slot.carries = s.carries;
    l.slots_.push_back(std::move(slot));
  }
  // Two carries swapped (a next carry that is another body input): staged through a block.
  if (const int64_t staged = staged_carry_bytes(body, inv); staged > 0) {
    WEFT_RETURN_IF_ERROR(device_allocate(l.stage_, staged, "staged carries of " + what));
    l.owned_ += static_cast<size_t>(staged);
  }
  return BoundPtr(std::move(loop));
}

StatusOr<std::vector<BoundPtr>> Binder::bind(const Program& program, void* arena,
                                             const std::vector<void*>& inputs, std::vector<int>* body_index,
                                             const std::vector<SlotPatch>& patches) {
  std::vector<BoundPtr> code;
  const auto resolve = [&](const BufferRef& r) { return buffer_address(r, arena, inputs); };
  // What each invocation may use of the arena as workspace (convolutions).
  const std::vector<ArenaRun> free_runs = arena_free_runs(program);
  for (size_t index = 0; index < program.code.size(); ++index) {
    const Invocation& inv = program.code[index];
    if (body_index == nullptr) current_root = index;
    InvocationBuffers b = resolve_buffers(inv, resolve);
    apply_slot_patches(patches, index, b);
    const std::vector<const void*>& in = b.in;
    const std::vector<Type>& types = b.types;
    void* out = b.out();
    BoundPtr bound;
    switch (inv.kind) {
      case Invocation::Kind::generated:
        bound = generated_bound(kernels[inv.kernel], root.kernels[inv.kernel], b.kernel_args(),
                                std::move(b.clear));
        break;
      case Invocation::Kind::contraction: {
        const BufferRef& c_ref = inv.results[inv.gemm_result];
        void* c = b.results[static_cast<size_t>(inv.gemm_result)];
        std::vector<void*> buffers = b.epilogue_args(inv.gemm_result);
        MatmulPlan plan;
        WEFT_ASSIGN_OR_RETURN(bool planned, plan_matmul(inv.node, types[0], types[1], plan));
        if (!planned) ++fallbacks;
        plan.math = contraction_math(types[0].dtype, d.tf32);
        if (planned && d.cublaslt != nullptr) {  // WEFT_CUBLASLT_EPILOGUE=1
          const LtEpilogueDecision lt = match_lt_epilogue(inv, root.kernels[inv.kernel].body, plan);
          if (lt.match) {
            WEFT_ASSIGN_OR_RETURN(bound, lt_contraction_bound(d, plan, types[0].dtype, lt.match->epilogue, in[0],
                                                              in[1], in[static_cast<size_t>(lt.match->bias_operand)], c));
          }
        }
        if (bound) break;  // else the GEMM and the generated epilogue
        bound = contraction_bound(inv.node, planned ? std::optional<MatmulPlan>(std::move(plan)) : std::nullopt,
                                  types[0], types[1], c_ref.type, in[0], in[1], c, kernels[inv.kernel],
                                  root.kernels[inv.kernel], std::move(buffers));
        break;
      }
      case Invocation::Kind::copy:
        bound = copy_bound(in[0], out, inv.results[0].type.bytes(), "copy");
        break;
      case Invocation::Kind::loop: {
        WEFT_ASSIGN_OR_RETURN(bound, bind_loop(*this, inv, in, b.results));
        break;
      }
      case Invocation::Kind::library: {
        const LibraryKind kind = library_kind(inv.node, types, inv.results[0].type);
        switch (kind) {
          case LibraryKind::all_reduce: {
            const int at = body_index == nullptr ? static_cast<int>(index) : -1;
            WEFT_ASSIGN_OR_RETURN(bound, all_reduce_bound(d, at, inv, in[0], out));
            break;
          }
          case LibraryKind::constant: {
            WEFT_ASSIGN_OR_RETURN(bound, constant_bound(inv.node, inv.results[0].type, out));
            break;
          }
          case LibraryKind::matmul: {
            MatmulPlan plan;
            WEFT_ASSIGN_OR_RETURN(bool planned, plan_matmul(inv.node, types[0], types[1], plan));
            WEFT_CHECK(planned, "cuda::Executor: library_kind planned a matmul cuBLAS refuses");
            plan.math = contraction_math(types[0].dtype, d.tf32);
            bound = matmul_bound(std::move(plan), types[0].dtype, in[0], in[1], out, inv.results[0].type.bytes());
            break;
          }
          case LibraryKind::convolution: {  // cuDNN
            // cuDNN wants its workspace aligned: the run's first 256-byte boundary on.
            const ArenaRun run = free_runs[index];
            const int64_t skip = (256 - run.offset % 256) % 256;
            FreeArena free;
            if (run.bytes > skip) {
              free = {static_cast<std::byte*>(arena) + run.offset + skip, static_cast<size_t>(run.bytes - skip)};
            }
            WEFT_ASSIGN_OR_RETURN(bound, convolution_bound(d, inv.node, types, inv.results[0].type, in, out, free));
            break;
          }
          case LibraryKind::pooling: {  // pool.cu
            WEFT_ASSIGN_OR_RETURN(bound, pooling_bound(inv.node, types, inv.results[0].type, in, out));
            break;
          }
          case LibraryKind::attention_grad: {  // three results: dq, dk, dv
            WEFT_ASSIGN_OR_RETURN(bound, attention_grad_bound(inv.node, types, in, b.results));
            break;
          }
          case LibraryKind::host:
            ++fallbacks;
            bound = fallback_bound(inv.node, types, inv.results[0].type, in, out);
            break;
          default: {
            WEFT_ASSIGN_OR_RETURN(bound, library_bound(kind, inv.node, types, inv.results[0].type, in, out));
            break;
          }
        }
        break;
      }
    }
    if (body_index != nullptr) {
      // A body invocation reports device errors under an index past the root's code.
      body_index->push_back(static_cast<int>(root.code.size() + sites.size()));
      sites.push_back({current_root, bound.get(), inv.node.loc});
    }
    code.push_back(std::move(bound));
  }
  return code;
}

}  // namespace weft::cuda
