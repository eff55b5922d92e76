// Fashion-MNIST with a small CNN: two 3×3 conv + 2×2 max-pool stages (with batch norm
// under --bn) and a 128-unit head, trained with Adam (JIT-compiled at startup; the same
// model compiled ahead of time is //examples/fashion_mnist:train).
//
//   bazel run //examples/fashion_mnist:cnn -- --epochs=5 --bn
#include <cstdio>

#include "examples/fashion_mnist/cnn_model.h"
#include "examples/fashion_mnist/train_loop.h"

int main(int argc, char** argv) {
  using namespace weft;
  examples::RunConfig config;
  config.name = "cnn";
  config.layout = ImageLayout::nchw;
  config.batch = 64;
  examples::parse_flags(argc, argv, config, /*allow_bn=*/true);
  StatusOr<FlowPtr> net = examples::fashion_mnist_cnn(config.bn);
  if (!net.ok()) {
    std::fprintf(stderr, "%s\n", net.error().to_string().c_str());
    return 1;
  }
  return examples::train(*net, config);
}
