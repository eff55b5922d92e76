#pragma once
// The entry point of a model source compiled by the weft_library / weft_binary macros
// (tools/aot/weft.bzl). The source defines ONE function, at global scope:
//
//   #include "tools/aot/model.h"
//   #include "frontend/modules.h"
//
//   weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
//     using namespace weft;
//     WEFT_ASSIGN_OR_RETURN(FlowPtr net, FlowBuilder::from(Linear(784, 256))
//                                            .through(ReLU()).through(Linear(256, 10)).build());
//     return aot::ModelSource{net, {{"x", Type{dtype, {batch, 784}}}}};
//   }
//
// `batch` and `dtype` are the macro's attributes; the step's batch is `inputs` followed
// by the target (whose type the loss decides, as in Trainer::compile). The source is
// compiled into the build-time generator and into the NAME_test / NAME_benchmark
// binaries (which compare with the JIT Trainer), never into the generated library.

#include <cstdint>
#include <source_location>
#include <vector>

#include "frontend/flow.h"
#include "ir/status.h"

namespace weft::aot {

struct ModelSource {
  FlowPtr net;
  /// The network's inputs for one training step: the stream input first, then the
  /// flow's input({...}) names (Trainer::compile's `inputs`).
  std::vector<InputSpec> inputs;
  /// Integer network inputs (token ids) take values in [0, token_range): the range the
  /// NAME_test and NAME_benchmark targets draw random batches from. 0: no integer inputs.
  int64_t token_range = 0;
  /// Where the model source made this ModelSource (its `return aot::ModelSource{...}`):
  /// the location the loss's nodes carry in the generated step (errors,
  /// --check-numerics), so the generated sources change only when the model does.
  std::source_location where = std::source_location::current();
};

}  // namespace weft::aot

/// Defined by the model source (see above).
weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype);
