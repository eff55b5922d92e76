// The suite's residual_tower (bench/models*.cc), compiled ahead of time by //bench/aot:residual_tower.
#include "bench/aot/suite_model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  return weft::bench::suite_model("residual_tower", batch, dtype);
}
