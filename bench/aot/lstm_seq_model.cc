// The suite's lstm_seq (bench/models*.cc), compiled ahead of time by //bench/aot:lstm_seq.
#include "bench/aot/suite_model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  return weft::bench::suite_model("lstm_seq", batch, dtype);
}
