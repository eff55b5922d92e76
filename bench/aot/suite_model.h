#pragma once
// A benchmark-suite model (bench/models.h) as an AOT model source, at a preset: the model
// sources of this directory (preset cpu) and the generated NAME_paper_model.cc of
// bench/aot/BUILD's CUDA libraries (preset paper) each define weft_model
// (tools/aot/model.h) with this.

#include "bench/models.h"
#include "tools/aot/model.h"

namespace weft::bench {

/// Suite model `name` at `preset` with its float inputs at `batch` rows and `dtype`.
inline StatusOr<aot::ModelSource> preset_model(const std::string& name, Preset preset,
                                               int64_t batch, DType dtype) {
  WEFT_ASSIGN_OR_RETURN(BenchModel m, make_bench_model(name, preset));
  for (InputSpec& in : m.inputs) {
    in.type.shape.dims[0] = batch;
    if (in.type.dtype != DType::i64) in.type.dtype = dtype;
  }
  return aot::ModelSource{m.net, m.inputs, m.token_range};
}

/// Suite model `name` at the cpu preset (the suite's CPU models).
inline StatusOr<aot::ModelSource> suite_model(const std::string& name, int64_t batch, DType dtype) {
  return preset_model(name, Preset::cpu, batch, dtype);
}

}  // namespace weft::bench
