#include "examples/fashion_mnist/cnn_model.h"

#include "frontend/modules.h"

namespace weft::examples {

StatusOr<FlowPtr> fashion_mnist_cnn(bool bn) {
  ConvOptions same{.kernel = 3, .padding = 1};
  auto stage = [&](int64_t in, int64_t out) {
    auto b = FlowBuilder::from(Conv2d(in, out, same));
    if (bn) b.through(BatchNorm2d(out));
    return b.through(ReLU()).through(MaxPool2d(2)).build();
  };
  WEFT_ASSIGN_OR_RETURN(FlowPtr first, stage(1, 32));
  WEFT_ASSIGN_OR_RETURN(FlowPtr second, stage(32, 64));
  return FlowBuilder::from(first)
      .through(second)
      .through(Flatten())
      .through(Linear(64 * 7 * 7, 128))
      .through(ReLU())
      .through(Dropout(0.25))
      .through(Linear(128, 10))
      .build();
}

}  // namespace weft::examples
