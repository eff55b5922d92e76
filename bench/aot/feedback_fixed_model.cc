// The suite's feedback_fixed (bench/models*.cc), compiled ahead of time by //bench/aot:feedback_fixed.
#include "bench/aot/suite_model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  return weft::bench::suite_model("feedback_fixed", batch, dtype);
}
