#include "bench/unroll.h"

#include <vector>

#include "frontend/modules.h"

namespace weft::bench {
namespace {

/// x[:, t, ...] as emitted ops: a slice of axis 1, then a reshape dropping it.
ValueId time_step(Emitter& e, ValueId x, int64_t t, const std::string& who) {
  const Shape s = e.shape(x);
  if (s.rank() < 2 || t < 0 || t >= s[1]) {
    e.fail(who + " needs a [batch, T, ...] input with T > " + std::to_string(t) + ", got " +
           e.type(x).to_string());
  }
  IntList start(s.rank(), 0), stop = s.dims, out;
  start[1] = t;
  stop[1] = t + 1;
  for (int i = 0; i < s.rank(); ++i) {
    if (i != 1) out.push_back(s[i]);
  }
  return e.reshape(e.op(Op::Slice, {x}, {{"start", start}, {"stop", stop}}), out);
}

class TimeStepModule : public UnaryModule {
 public:
  explicit TimeStepModule(int64_t t) : t_(t) {}
  std::string describe() const override { return "TimeStep(" + std::to_string(t_) + ")"; }
  ValueId forward1(Emitter& e, ValueId x) override { return time_step(e, x, t_, describe()); }

 private:
  int64_t t_;
};

class UnrolledModule : public UnaryModule {
 public:
  UnrolledModule(bool lstm, int64_t input, int64_t hidden, int64_t layers, std::source_location loc)
      : lstm_(lstm), input_(input), hidden_(hidden), loc_(loc) {
    for (int64_t l = 0; l < layers; ++l) {
      int64_t in = l == 0 ? input : hidden;
      cells_.push_back(lstm ? LSTMCell(in, hidden) : GRUCell(in, hidden));
      views_.push_back(LSTMHidden(hidden));
    }
  }

  std::string describe() const override {
    return std::string(lstm_ ? "UnrolledLSTM(" : "UnrolledGRU(") + std::to_string(input_) + "->" +
           std::to_string(hidden_) + ", " + std::to_string(cells_.size()) + " layers)";
  }

  ValueId forward1(Emitter& e, ValueId x) override {
    const Type t = e.type(x);
    if (t.shape.rank() != 3 || t.shape[2] != input_ || cells_.empty()) {
      e.fail(describe() + " expects a [batch, T, " + std::to_string(input_) + "] input, got " +
             t.to_string());
    }
    const int64_t batch = t.shape[0], steps = t.shape[1];
    // The LSTM carries the packed state [h, c] (frontend/modules.h: LSTMCell).
    const int64_t width = lstm_ ? 2 * hidden_ : hidden_;
    std::vector<ValueId> state(cells_.size(), e.full({batch, width}, 0.0, t.dtype));
    ValueId top = kNoValue;
    for (int64_t s = 0; s < steps; ++s) {
      ValueId in = time_step(e, x, s, describe());
      for (size_t l = 0; l < cells_.size(); ++l) {
        const std::string name = "l" + std::to_string(l);
        state[l] =
            e.emit(cells_[l], {in, state[l]}, name + " step " + std::to_string(s), name, loc_);
        in = lstm_ ? e.emit(views_[l], {state[l]}, "h", "", loc_) : state[l];
      }
      top = in;
    }
    return top;
  }

 private:
  bool lstm_;
  int64_t input_, hidden_;
  std::source_location loc_;
  std::vector<ModulePtr> cells_, views_;
};

}  // namespace

ModulePtr TimeStep(int64_t t) { return std::make_shared<TimeStepModule>(t); }

ModulePtr UnrolledGRU(int64_t input_size, int64_t hidden_size, int64_t layers,
                      std::source_location loc) {
  return std::make_shared<UnrolledModule>(false, input_size, hidden_size, layers, loc);
}

ModulePtr UnrolledLSTM(int64_t input_size, int64_t hidden_size, int64_t layers,
                       std::source_location loc) {
  return std::make_shared<UnrolledModule>(true, input_size, hidden_size, layers, loc);
}

}  // namespace weft::bench
