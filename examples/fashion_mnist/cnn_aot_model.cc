// The model source of //examples/fashion_mnist:train (tools/aot/model.h): the batch-norm
// CNN of cnn.cc --bn, compiled ahead of time.
#include "examples/fashion_mnist/cnn_model.h"
#include "tools/aot/model.h"

weft::StatusOr<weft::aot::ModelSource> weft_model(int64_t batch, weft::DType dtype) {
  WEFT_ASSIGN_OR_RETURN(weft::FlowPtr net, weft::examples::fashion_mnist_cnn(/*bn=*/true));
  return weft::aot::ModelSource{net, {{"x", weft::Type{dtype, {batch, 1, 28, 28}}}}};
}
