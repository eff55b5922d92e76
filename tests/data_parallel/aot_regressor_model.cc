// The model source of //tests/data_parallel:aot_regressor (tools/aot/model.h): the
// driver tests' npy-regressor (training/driver/testing/jit_model.cc), f32[batch,3] ->
// Linear(3, 2), compiled ahead of time at half the JIT model's batch so that 2 ranks
// of it train on the JIT model's global batch.
#include "frontend/modules.h"
#include "tools/aot/model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  WEFT_ASSIGN_OR_RETURN(weft::FlowPtr net, weft::FlowBuilder::from(weft::Linear(3, 2)).build());
  return weft::aot::ModelSource{net, {{"x", weft::Type{dtype, {batch, 3}}}}};
}
