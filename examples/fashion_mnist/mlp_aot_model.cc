// The model source of //examples/fashion_mnist:train_mlp_cuda (tools/aot/model.h): the
// 784-256-256-10 MLP of mlp.cc, compiled ahead of time.
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "tools/aot/model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  using namespace weft;
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, FlowBuilder::from(Linear(784, 256))
                                         .through(ReLU())
                                         .through(Linear(256, 256))
                                         .through(ReLU())
                                         .through(Linear(256, 10))
                                         .build());
  return aot::ModelSource{net, {{"x", Type{dtype, {batch, 784}}}}};
}
