// The suite's gru_seq (bench/models*.cc), compiled ahead of time by //bench/aot:gru_seq.
#include "bench/aot/suite_model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  return weft::bench::suite_model("gru_seq", batch, dtype);
}
