// One graph that uses every FlowBuilder method and several modules. Prints a summary;
// with --dump=DIR it writes DIR/showcase.wir (for `weftc check`) and DIR/showcase.dot
// (for graphviz: `dot -Tsvg DIR/showcase.dot > showcase.svg`).
//
//   bazel run //examples:showcase -- --dump=out/showcase
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "frontend/draw.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "ir/text.h"
#include "tools/weftc/args.h"

namespace weft {
namespace {

StatusOr<Model> build_showcase() {
  // A labelled encoder with a residual block: from, through, tag, also, label.
  WEFT_ASSIGN_OR_RETURN(FlowPtr encoder, FlowBuilder::from(Linear(16, 32))
                                             .through(GELU())
                                             .tag("hidden")
                                             .through(LayerNorm(32))
                                             .also(Linear(32, 32))
                                             .label("encoder")
                                             .build());
  // A labelled head, used as one branch of a split.
  WEFT_ASSIGN_OR_RETURN(FlowPtr head, FlowBuilder::from(Linear(32, 32))
                                          .through(Tanh())
                                          .label("head")
                                          .build());
  auto shared = Linear(32, 32);  // used twice: one set of parameters
  return FlowBuilder::from(encoder)
      .input({"context"})                             // an extra graph input
      .fork(Linear(32, 8))                            // a side branch...
      .tag("aux")                                     // ...named by the next tag
      .split({head, shared, Identity()})              // parallel branches
      .tag_group("branches")                          // branches.0, branches.1, branches.2
      .merge(Merge::mean())
      .also_with(shared, Dropout(0.1))                // shared(x) + dropout(x)
      .through(Bilinear(32, 32, 32))                  // two inputs: the stream and...
      .uses({"context"})                              // ...the tagged context
      .split({Identity(), SiLU()})
      .merge(Merge::concat(1))                        // [8, 64]
      .through(Linear(64, 10))
      .build({{"x", f32({8, 16})}, {"context", f32({8, 32})}});
}

int main_impl(int argc, char** argv) {
  std::string dump;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--dump=", 0) == 0) {
      dump = cli::resolve_path(a.substr(7));
    } else if (a == "--help") {
      std::printf(
          "usage: showcase [--dump=DIR]\n"
          "Builds one graph that uses every FlowBuilder method and several modules and\n"
          "prints its node, parameter-tensor and parameter counts and its labels.\n"
          "  --dump=DIR   also write DIR/showcase.wir (for `weftc check`) and\n"
          "               DIR/showcase.dot (`dot -Tsvg DIR/showcase.dot > showcase.svg`)\n");
      return 0;
    } else {
      std::fprintf(stderr, "usage: showcase [--dump=DIR]\n");
      return 1;
    }
  }
  StatusOr<Model> model = build_showcase();
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.error().to_string().c_str());
    return 1;
  }
  std::printf("showcase: %zu nodes, %zu parameter tensors, %lld parameters, labels:",
              model->graph().nodes().size(), model->parameters().size(),
              static_cast<long long>(model->parameter_count()));
  for (const std::string& l : model->label_paths()) std::printf(" %s", l.c_str());
  std::printf("\n");
  if (!dump.empty()) {
    ::mkdir(dump.c_str(), 0755);
    std::ofstream(dump + "/showcase.wir") << print_graph(model->graph());
    std::ofstream(dump + "/showcase.dot") << model_to_dot(*model);
    std::printf("wrote %s/showcase.wir and %s/showcase.dot\n", dump.c_str(), dump.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::main_impl(argc, argv); }
