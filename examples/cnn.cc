// A small CNN for 28×28×1 images (Fashion-MNIST): two conv + pool stages and an MLP
// head. Prints its IR and parameter count.
//
//   bazel run //examples:cnn
#include <cstdio>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "examples/no_flags.h"
#include "ir/text.h"

int main(int argc, char** argv) {
  using namespace weft;
  if (int rc = examples::no_flags(argc, argv, "cnn",
                                  "Builds a small CNN for 28x28x1 images (two conv + batch norm + pool\n"
                                  "stages and an MLP head) and prints its IR and parameter count.\n");
      rc >= 0) {
    return rc;
  }
  ConvOptions same{.kernel = 3, .padding = 1};
  StatusOr<Model> model = FlowBuilder::from(Conv2d(1, 32, same))
                              .through(BatchNorm2d(32))
                              .through(ReLU())
                              .through(MaxPool2d(2))  // 14×14
                              .through(Conv2d(32, 64, same))
                              .through(BatchNorm2d(64))
                              .through(ReLU())
                              .through(MaxPool2d(2))  // 7×7
                              .through(Flatten())
                              .through(Linear(64 * 7 * 7, 128))
                              .through(ReLU())
                              .through(Dropout(0.25))
                              .through(Linear(128, 10))
                              .build({{"x", f32({64, 1, 28, 28})}});
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.error().to_string().c_str());
    return 1;
  }
  std::printf("%s", print_graph(model->graph()).c_str());
  std::printf("parameters: %lld\n", static_cast<long long>(model->parameter_count()));
  return 0;
}
