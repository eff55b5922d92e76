// The model source of //examples/fashion_mnist:ponder_cuda (tools/aot/model.h): the
// ponder classifier of ponder.cc, compiled ahead of time.
#include "examples/fashion_mnist/ponder_model.h"
#include "tools/aot/model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  WEFT_ASSIGN_OR_RETURN(weft::examples::PonderModel m, weft::examples::ponder_model());
  return weft::aot::ModelSource{m.net, {{"x", weft::Type{dtype, {batch, 1, 28, 28}}}}};
}
