// Fashion-MNIST with a 784-256-256-10 ReLU MLP, trained with Adam by weft's compiled
// training step.
//
//   bazel run //examples/fashion_mnist:mlp -- --epochs=10
#include "examples/fashion_mnist/train_loop.h"
#include "frontend/modules.h"

int main(int argc, char** argv) {
  using namespace weft;
  examples::RunConfig config;
  config.name = "mlp";
  examples::parse_flags(argc, argv, config);
  auto net = FlowBuilder::from(Linear(784, 256))
                 .through(ReLU())
                 .through(Linear(256, 256))
                 .through(ReLU())
                 .through(Linear(256, 10))
                 .build();
  if (!net.ok()) {
    std::fprintf(stderr, "%s\n", net.error().to_string().c_str());
    return 1;
  }
  return examples::train(*net, config);
}
