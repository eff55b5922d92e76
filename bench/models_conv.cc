// The convolutional models. cpu sizes, paper sizes in parentheses. Both are flat chains,
// so their parameter names are PyTorch's nn.Sequential names (BatchNorm2d's state
// `running_mean`, `running_var`, `num_batches_tracked` included).
#include "bench/models_internal.h"
#include "frontend/modules.h"

namespace weft::bench::internal {

// 4 × [Conv k4 s2 p1, BN, ReLU] over channels 3 → 16 → 32 → 64 → 128 (64 → ... → 512):
// Conv `0`, `3`, `6`, `9`, BN `1`, `4`, `7`, `10`; 3 × [ConvT k4 s2 p1, BN, ReLU],
// 128 → 64 → 32 → 16: ConvT `12`, `15`, `18`, BN `13`, `16`, `19`; ConvT(16 → 3, k4 s2 p1)
// `21`, then Tanh. Input [16, 3, 32, 32] ([64, 3, 64, 64]); the target is the input.
StatusOr<BenchModel> conv_autoenc(Sizes s) {
  const ConvOptions down{.kernel = 4, .stride = 2, .padding = 1};
  const std::vector<int64_t> ch = {3, s.width(64), s.width(128), s.width(256), s.width(512)};
  FlowBuilder f = FlowBuilder::from(Conv2d(ch[0], ch[1], down));
  f.through(BatchNorm2d(ch[1])).through(ReLU());
  for (int i = 1; i < 4; ++i) {
    f.through(Conv2d(ch[i], ch[i + 1], down)).through(BatchNorm2d(ch[i + 1])).through(ReLU());
  }
  for (int i = 4; i > 1; --i) {
    f.through(ConvTranspose2d(ch[i], ch[i - 1], down))
        .through(BatchNorm2d(ch[i - 1]))
        .through(ReLU());
  }
  f.through(ConvTranspose2d(ch[1], 3, down)).through(Tanh());
  BenchModel m;
  m.name = "conv_autoenc";
  WEFT_ASSIGN_OR_RETURN(m.net, finish(f));
  const int64_t batch = s.batch(64), side = s.image();
  m.inputs = {{"input.0", f32({batch, 3, side, side})}};
  m.loss = LossSpec::mse();
  m.target = f32({batch, 3, side, side});
  m.target_is_input = true;
  return m;
}

// 5 × [Conv k3 p1, BN, ReLU] over channels 3 → 16 → 32 → 64 → 128 → 128
// (64 → 128 → 256 → 512 → 512), MaxPool 2 after the first four: Conv `0`, `4`, `8`, `12`,
// `16`, BN `1`, `5`, `9`, `13`, `17`; global average pool (19), Flatten (20),
// Linear(128, 25) (512, 100) `21`. Input [32, 3, 32, 32] ([128, 3, 64, 64]).
StatusOr<BenchModel> convnet(Sizes s) {
  const ConvOptions same{.kernel = 3, .stride = 1, .padding = 1};
  const std::vector<int64_t> ch = {
      3, s.width(64), s.width(128), s.width(256), s.width(512), s.width(512)};
  const int64_t classes = s.width(100);
  FlowBuilder f = FlowBuilder::from(Conv2d(ch[0], ch[1], same));
  f.through(BatchNorm2d(ch[1])).through(ReLU());
  for (int i = 1; i < 5; ++i) {
    f.through(MaxPool2d(2))
        .through(Conv2d(ch[i], ch[i + 1], same))
        .through(BatchNorm2d(ch[i + 1]))
        .through(ReLU());
  }
  f.through(AdaptiveAvgPool2d(1, 1)).through(Flatten()).through(Linear(ch[5], classes));
  BenchModel m;
  m.name = "convnet";
  WEFT_ASSIGN_OR_RETURN(m.net, finish(f));
  const int64_t batch = s.batch(128), side = s.image();
  m.inputs = {{"input.0", f32({batch, 3, side, side})}};
  m.loss = LossSpec::mse();
  m.target = f32({batch, classes});
  return m;
}

}  // namespace weft::bench::internal
