#include <cstddef>
#include <cstring>

#include "ir/scan.h"
#include "runtime/cpu/executor_bound.h"

namespace weft::cpu {
namespace {

// A loop (runtime/program.h): its body bound as an executor of its own, run `length` times
// on the caller's pool, with the copies described in executor.h.
class LoopBound : public Executor::Bound {
 public:
  LoopBound(std::unique_ptr<Executor> body, const Invocation& inv, std::vector<const void*> in,
            std::vector<void*> results)
      : body_(std::move(body)), in_(std::move(in)), results_(std::move(results)),
        length_(inv.node.int_attr("length")), consts_(static_cast<int>(inv.node.int_attr("consts"))),
        carries_(static_cast<int>(inv.node.int_attr("carries"))), reverse_(inv.node.bool_attr("reverse")),
        exit_(scan_exit(inv.node)) {
    const Program& p = body_->program();
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
  }

  Status run(ThreadPool& pool) override {
    // The consts and the xs are read in place (each slot's body is bound to them).
    for (int k = consts_; k < consts_ + carries_; ++k) std::memcpy(body_->input_data(k), in_[k], input_bytes_[k]);
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
      WEFT_RETURN_IF_ERROR(body_->run_body(pool, i));
      // The ys first: one may be a carry's current value.
      for (size_t y = carries_; y < results_.size(); ++y) {
        const size_t bytes = output_bytes_[y];
        std::memcpy(static_cast<std::byte*>(results_[y]) + i * bytes, body_->output_data(static_cast<int>(y), i), bytes);
      }
      if (staged_) {
        size_t at = 0;
        for (int c = 0; c < carries_; ++c) {
          std::memcpy(stage_.data() + at, body_->output_data(c, i), output_bytes_[c]);
          at += output_bytes_[c];
        }
        at = 0;
        for (int c = 0; c < carries_; ++c) {
          std::memcpy(body_->input_data(consts_ + c), stage_.data() + at, output_bytes_[c]);
          at += output_bytes_[c];
        }
      } else {
        for (int c = 0; c < carries_; ++c) {
          void* to = body_->input_data(consts_ + c);
          if (const void* from = body_->output_data(c, i); to != from) std::memcpy(to, from, output_bytes_[c]);
        }
      }
    }
    for (; step < length_; ++step) zero_ys(reverse_ ? length_ - 1 - step : step);  // after a stop
    for (int c = 0; c < carries_; ++c) std::memcpy(results_[c], body_->input_data(consts_ + c), output_bytes_[c]);
    return Status::ok_status();
  }

  std::string describe() const override {
    return "loop " + std::to_string(length_) + "x over @" + body_->program().name + " (" +
           std::to_string(body_->program().code.size()) + " invocations)";
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
  int64_t length_;
  int consts_, carries_;
  bool reverse_;
  ScanExit exit_;
  std::vector<size_t> input_bytes_, output_bytes_;
  bool staged_ = false;
  std::vector<std::byte> stage_;
};

}  // namespace

std::unique_ptr<Executor::Bound> make_loop_bound(std::unique_ptr<Executor> body, const Invocation& inv,
                                                 std::vector<const void*> in, std::vector<void*> results) {
  return std::make_unique<LoopBound>(std::move(body), inv, std::move(in), std::move(results));
}

}  // namespace weft::cpu
