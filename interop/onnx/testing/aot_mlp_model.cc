// The model source of //interop/onnx:aot_export_mlp (tools/aot/model.h): a small MLP
// regressor, the training binary whose --export-onnx aot_export_test checks.
#include "frontend/modules.h"
#include "tools/aot/model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  WEFT_ASSIGN_OR_RETURN(weft::FlowPtr net, weft::FlowBuilder::from(weft::Linear(6, 16))
                                               .through(weft::Tanh())
                                               .through(weft::Linear(16, 3))
                                               .build());
  return weft::aot::ModelSource{net, {{"x", weft::Type{dtype, {batch, 6}}}}};
}
