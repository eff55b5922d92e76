#pragma once
// A benchmark-suite model at the paper preset as an AOT model source, for the CUDA
// libraries of bench/aot/BUILD (NAME_cuda): their generated model sources
// (NAME_paper_model.cc) each define weft_model (tools/aot/model.h) with this.

#include "bench/models.h"
#include "tools/aot/model.h"

namespace weft::bench {

/// Suite model `name` at the paper preset with its float inputs at `batch` rows and `dtype`.
inline StatusOr<aot::ModelSource> paper_model(const std::string& name, int64_t batch, DType dtype) {
  WEFT_ASSIGN_OR_RETURN(BenchModel m, make_bench_model(name, Preset::paper));
  for (InputSpec& in : m.inputs) {
    in.type.shape.dims[0] = batch;
    if (in.type.dtype != DType::i64) in.type.dtype = dtype;
  }
  return aot::ModelSource{m.net, m.inputs, m.token_range};
}

}  // namespace weft::bench
