// The suite's iterative_refine (bench/models*.cc), compiled ahead of time by //bench/aot:iterative_refine.
#include "bench/aot/suite_model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  return weft::bench::suite_model("iterative_refine", batch, dtype);
}
