// The model source of //tests/fuzz:resume_model (tools/aot/model.h), which
// driver_resume_fuzzer trains: a convolution, batch norm (running statistics are state)
// and a linear layer on f32[batch,1,4,4], small enough that a checkpoint is a few KB and
// one step takes microseconds.
#include "frontend/modules.h"
#include "tools/aot/model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  using namespace weft;
  WEFT_ASSIGN_OR_RETURN(FlowPtr net, FlowBuilder::from(Conv2d(1, 2, {.kernel = 3, .padding = 1}))
                                         .through(BatchNorm2d(2))
                                         .through(Flatten())
                                         .through(Linear(2 * 4 * 4, 3))
                                         .build());
  return aot::ModelSource{net, {{"x", Type{dtype, {batch, 1, 4, 4}}}}};
}
