// The recurrent models: the builder's GRU and LSTM (frontend/modules.h: one loop over the
// 50 steps per layer). cpu sizes, paper sizes in parentheses.
#include "bench/models_internal.h"
#include "frontend/modules.h"

namespace weft::bench::internal {
namespace {

constexpr int64_t kSteps = 50;

/// `recurrence` over an f32 [batch, 50, in] input, then Linear(hidden, in) at position 1.
StatusOr<BenchModel> sequence_model(std::string name, Sizes s, ModulePtr recurrence) {
  const int64_t in = s.width(256), hidden = s.width(512), batch = s.batch(128);
  BenchModel m;
  m.name = std::move(name);
  WEFT_ASSIGN_OR_RETURN(
      m.net, finish(FlowBuilder::from(std::move(recurrence)).through(Linear(hidden, in))));
  m.inputs = {{"input.0", f32({batch, kSteps, in})}};
  m.loss = LossSpec::mse();
  m.target = f32({batch, in});
  return m;
}

}  // namespace

// GRUCell(64 -> 128) (256 -> 512) over 50 steps from h = 0 on [32, 50, 64] ([128, 50, 256]):
// `0.l0.weight_ih`, `0.l0.weight_hh`, `0.l0.bias_ih`, `0.l0.bias_hh` (nn.GRUCell's
// `weight_ih`, ...); the final h → Linear(128, 64) `1.weight`, `1.bias`.
StatusOr<BenchModel> gru_seq(Sizes s) {
  return sequence_model("gru_seq", s, GRU(s.width(256), s.width(512), {.last = true}));
}

// LSTM(64 -> 128, 2 layers) (256 -> 512) over 50 steps on [32, 50, 64] ([128, 50, 256]):
// `0.l0.weight_ih`, `0.l0.weight_hh`, `0.l0.bias_ih`, `0.l0.bias_hh`, then `0.l1.*`
// (nn.LSTM's `weight_ih_l0`, ..., `weight_ih_l1`, ...); the last step's top h →
// Linear(128, 64) `1.weight`, `1.bias`.
StatusOr<BenchModel> lstm_seq(Sizes s) {
  return sequence_model("lstm_seq", s, LSTM(s.width(256), s.width(512), {.layers = 2, .last = true}));
}

}  // namespace weft::bench::internal
