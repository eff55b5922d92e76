#include <algorithm>
#include <cstddef>
#include <cstring>

#include "ir/scan.h"
#include "runtime/cpu/executor_bound.h"
#include "runtime/reference/numerics.h"

namespace weft::cpu {
namespace {

// A loop (runtime/program.h): its body bound as an executor of its own, run `length` times
// on the caller's pool, with the copies described in executor.h ("Loops") and no more:
// what runtime/loop_slots.h's plan binds in place is not copied.
class LoopBound : public Executor::Bound {
 public:
  LoopBound(std::unique_ptr<Executor> body, const Invocation& inv, std::vector<const void*> in,
            std::vector<void*> results, LoopSlots plan)
      : body_(std::move(body)), in_(std::move(in)), results_(std::move(results)), plan_(std::move(plan)),
        length_(inv.node.int_attr("length")), consts_(static_cast<int>(inv.node.int_attr("consts"))),
        carries_(static_cast<int>(inv.node.int_attr("carries"))), reverse_(inv.node.bool_attr("reverse")),
        exit_(scan_exit(inv.node)), loc_(inv.node.loc), check_numerics_(body_->checks_numerics()) {
    const Program& p = body_->program();
    const size_t xs = in_.size() - static_cast<size_t>(consts_ + carries_);
    per_slot_ = loop_slot_bindings(inv, p) == length_;
    copy_xs_ = !per_slot_ && xs > 0;
    for (const ProgramInput& input : p.inputs) input_bytes_.push_back(input.type.bytes());
    for (const BufferRef& out : p.outputs) output_bytes_.push_back(out.type.bytes());
    // A next carry that is another body input (two carries swapped) must be read before
    // any carry is written: such loops stage the carries. One written over its own input
    // (the lowering's carries_assigned) needs no copy at all.
    for (int c = 0; c < carries_; ++c) {
      staged_ = staged_ || (p.outputs[c].space == Space::input && p.outputs[c].input != consts_ + c);
    }
    if (staged_) {
      size_t total = 0;
      for (int c = 0; c < carries_; ++c) total += output_bytes_[c];
      stage_.resize(total);
    }
    copies_ = loop_copies_per_iteration(plan_, p, inv);
    // Where the chained carries start and end (the first and last iterations' slots).
    if (per_slot_ && length_ >= 1) {
      first_carries_ = bind_loop_slot(plan_, p, inv, in_, results_, reverse_ ? length_ - 1 : 0).carries;
      last_outputs_ = bind_loop_slot(plan_, p, inv, in_, results_, reverse_ ? 0 : length_ - 1).outputs;
    }
  }

  Status run(ThreadPool& pool) override {
    // The consts and the xs are read in place (each slot's body is bound to them), and so
    // are the initial values of the carries chained to a ys; a shifted carry starts in
    // its ys's first slot.
    for (int c = 0; c < carries_; ++c) {
      void* to = plan_.chained(c) ? const_cast<void*>(first_carries_[c]) : body_->input_data(consts_ + c);
      if (to != in_[consts_ + c]) std::memcpy(to, in_[consts_ + c], output_bytes_[c]);
    }
    int64_t step = 0;
    for (; step < length_; ++step) {
      const int64_t i = reverse_ ? length_ - 1 - step : step;
      // An early exit (ir/ops.def): the loop stops once the stop carry is true; an
      // inactive iteration is skipped. Either way its ys slot is zero.
      if (exit_.stop_carry >= 0 && *static_cast<const bool*>(body_->input_data(consts_ + static_cast<int>(exit_.stop_carry)))) {
        break;
      }
      if (exit_.active_operand >= 0 && !static_cast<const bool*>(in_[static_cast<size_t>(exit_.active_operand)])[i]) {
        zero_ys(i);
        continue;
      }
      if (copy_xs_) {
        for (size_t k = static_cast<size_t>(consts_ + carries_); k < in_.size(); ++k) {
          const size_t bytes = input_bytes_[k];
          std::memcpy(body_->input_data(static_cast<int>(k)), static_cast<const std::byte*>(in_[k]) + i * bytes, bytes);
        }
      }
      const int64_t slot = per_slot_ ? i : 0;
      if (Status ran = body_->run_body(pool, slot); !ran.ok()) {
        Error e = ran.error();
        // check-numerics found the body's invocation at fault: say in which iteration.
        if (check_numerics_ && e.message.rfind("check-numerics: ", 0) == 0) {
          e.message += reference::loop_iteration_suffix(i, loc_);
        }
        return e;
      }
      // The ys first: one may be a carry's current value. A ys written in its slot is
      // there already.
      for (size_t y = carries_; y < results_.size(); ++y) {
        const size_t bytes = output_bytes_[y];
        void* to = static_cast<std::byte*>(results_[y]) + i * bytes;
        if (const void* from = body_->output_data(static_cast<int>(y), slot); to != from) std::memcpy(to, from, bytes);
      }
      if (staged_) {
        size_t at = 0;
        for (int c = 0; c < carries_; ++c) {
          std::memcpy(stage_.data() + at, body_->output_data(c, slot), output_bytes_[c]);
          at += output_bytes_[c];
        }
        at = 0;
        for (int c = 0; c < carries_; ++c) {
          std::memcpy(body_->input_data(consts_ + c), stage_.data() + at, output_bytes_[c]);
          at += output_bytes_[c];
        }
      } else {
        for (int c = 0; c < carries_; ++c) {
          if (plan_.chained(c)) continue;  // the next slot reads it where it is
          void* to = body_->input_data(consts_ + c);
          if (const void* from = body_->output_data(c, slot); to != from) std::memcpy(to, from, output_bytes_[c]);
        }
      }
    }
    if (results_.size() > static_cast<size_t>(carries_)) {  // after a stop
      for (; step < length_; ++step) zero_ys(reverse_ ? length_ - 1 - step : step);
    }
    // A chained carry's last value is in the last iteration's slot (a loop with chains
    // has no exits); a shifted one's is in the result already.
    for (int c = 0; c < carries_; ++c) {
      const void* from = plan_.chained(c) ? last_outputs_[c] : body_->input_data(consts_ + c);
      if (from != results_[c]) std::memcpy(results_[c], from, output_bytes_[c]);
    }
    return Status::ok_status();
  }

  void set_check_numerics(bool on) override {
    check_numerics_ = on;
    body_->set_check_numerics(on);
  }

  std::string describe() const override {
    return "loop " + std::to_string(length_) + "x over @" + body_->program().name + " (" +
           std::to_string(body_->program().code.size()) + " invocations, " +
           (per_slot_ ? "bound per slot" : "bound once") + "; copies per iteration: " +
           std::to_string(copies_.calls) + " of " + std::to_string(copies_.bytes) + " bytes)";
  }

 private:
  void zero_ys(int64_t i) {
    for (size_t y = carries_; y < results_.size(); ++y) {
      std::memset(static_cast<std::byte*>(results_[y]) + i * output_bytes_[y], 0, output_bytes_[y]);
    }
  }

  std::unique_ptr<Executor> body_;
  std::vector<const void*> in_;
  std::vector<void*> results_;
  LoopSlots plan_;  ///< What the body's bindings hold in place (runtime/loop_slots.h).
  int64_t length_;
  int consts_, carries_;
  bool reverse_;
  ScanExit exit_;
  std::vector<size_t> input_bytes_, output_bytes_;
  bool staged_ = false;
  Location loc_;
  bool check_numerics_ = false;
  bool per_slot_ = true;   ///< The body is bound once per slot (loop_slot_bindings).
  bool copy_xs_ = false;   ///< Bound once: each iteration's xs are copied into its inputs.
  std::vector<std::byte> stage_;
  LoopCopies copies_;  ///< Per iteration that runs (for describe()).
  /// Per carry: where the first iteration reads a chained carry; per output: where the
  /// last iteration leaves it (bind_loop_slot).
  std::vector<const void*> first_carries_, last_outputs_;
};

}  // namespace

std::unique_ptr<Executor::Bound> make_loop_bound(std::unique_ptr<Executor> body, const Invocation& inv,
                                                 std::vector<const void*> in, std::vector<void*> results,
                                                 LoopSlots plan) {
  return std::make_unique<LoopBound>(std::move(body), inv, std::move(in), std::move(results), std::move(plan));
}

}  // namespace weft::cpu
