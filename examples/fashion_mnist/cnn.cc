// Fashion-MNIST with a small CNN: two 3×3 conv + 2×2 max-pool stages (with batch norm
// under --bn) and a 128-unit head, trained with Adam.
//
//   bazel run //examples/fashion_mnist:cnn -- --epochs=5 --bn
#include "examples/fashion_mnist/train_loop.h"
#include "frontend/modules.h"

int main(int argc, char** argv) {
  using namespace weft;
  examples::RunConfig config;
  config.name = "cnn";
  config.layout = ImageLayout::nchw;
  config.batch = 64;
  examples::parse_flags(argc, argv, config, /*allow_bn=*/true);
  ConvOptions same{.kernel = 3, .padding = 1};
  auto stage = [&](int64_t in, int64_t out) {
    auto b = FlowBuilder::from(Conv2d(in, out, same));
    if (config.bn) b.through(BatchNorm2d(out));
    return b.through(ReLU()).through(MaxPool2d(2)).build();
  };
  auto first = stage(1, 32), second = stage(32, 64);
  if (!first.ok() || !second.ok()) return 1;
  auto net = FlowBuilder::from(*first)
                 .through(*second)
                 .through(Flatten())
                 .through(Linear(64 * 7 * 7, 128))
                 .through(ReLU())
                 .through(Dropout(0.25))
                 .through(Linear(128, 10))
                 .build();
  if (!net.ok()) {
    std::fprintf(stderr, "%s\n", net.error().to_string().c_str());
    return 1;
  }
  return examples::train(*net, config);
}
