// The model from weft's README (and flodl's): Linear → GELU → LayerNorm → residual
// Linear → Linear. Prints its IR and parameter count.
//
//   bazel run //examples:readme_model
#include <cstdio>

#include "frontend/flow.h"
#include "frontend/modules.h"
#include "ir/text.h"

int main() {
  using namespace weft;
  StatusOr<Model> model = FlowBuilder::from(Linear(784, 256))
                              .through(GELU())
                              .tag("hidden")
                              .through(LayerNorm(256))
                              .also(Linear(256, 256))  // residual: x + Linear(x)
                              .through(Linear(256, 10))
                              .build({{"x", f32({128, 784})}});
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.error().to_string().c_str());
    return 1;
  }
  std::printf("%s", print_graph(model->graph()).c_str());
  std::printf("parameters: %lld\n", static_cast<long long>(model->parameter_count()));
  return 0;
}
