// The model source of //tools/aot:scheduled_momentum (tools/aot/model.h): a small
// classifier whose SGD momentum is a runtime input of the step (scheduled_momentum), so
// that its NAME_test checks the AOT step fed a changing momentum against the Trainer.
#include "frontend/modules.h"
#include "tools/aot/model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  WEFT_ASSIGN_OR_RETURN(weft::FlowPtr net, weft::FlowBuilder::from(weft::Linear(6, 16))
                                               .through(weft::Tanh())
                                               .through(weft::Linear(16, 4))
                                               .build());
  return weft::aot::ModelSource{net, {{"x", weft::Type{dtype, {batch, 6}}}}};
}
