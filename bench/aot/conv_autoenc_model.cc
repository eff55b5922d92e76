// The suite's conv_autoenc (bench/models*.cc), compiled ahead of time by //bench/aot:conv_autoenc.
#include "bench/aot/suite_model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  return weft::bench::suite_model("conv_autoenc", batch, dtype);
}
