// Draws a network and its training step built in C++ with the graph viewer
// (tools/viz/cpu_viz.h): labelled subgraphs as clusters, the tag annotated, the
// backward pass and the Adam update coloured by kind, and the CPU backend's memory plan
// as a picture.
//
//   bazel run //examples:viz_training_step -- --out=DIR
//
// writes DIR/model.html (the forward network), DIR/train_step.html (forward, loss,
// backward and optimizer, as the CPU backend runs it) and DIR/train_step_memory.svg.
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "codegen/lower.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "frontend/training.h"
#include "tools/viz/cpu_viz.h"
#include "tools/viz/memory_picture.h"
#include "tools/weftc/args.h"

namespace weft {
namespace {

Status write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out.flush()) return Error{"cannot write '" + path + "'"};
  std::printf("wrote %s\n", path.c_str());
  return Status();
}

Status run(const std::string& dir) {
  ::mkdir(dir.c_str(), 0755);
  WEFT_ASSIGN_OR_RETURN(FlowPtr encoder, FlowBuilder::from(Linear(784, 256))
                                             .through(GELU())
                                             .tag("hidden")
                                             .through(LayerNorm(256))
                                             .label("encoder")
                                             .build());
  WEFT_ASSIGN_OR_RETURN(FlowPtr head,
                        FlowBuilder::from(Linear(256, 64)).through(ReLU()).label("head").build());
  WEFT_ASSIGN_OR_RETURN(FlowPtr net,
                        FlowBuilder::from(encoder).through(head).through(Linear(64, 10)).build());
  const std::vector<InputSpec> inputs = {{"x", f32({64, 784})}};

  // The network alone, with its tags.
  WEFT_ASSIGN_OR_RETURN(Model model, net->build(inputs));
  viz::VizOptions options;
  for (const auto& [tag, v] : model.tags()) options.tags[model.graph().value(v).name] = tag;
  WEFT_ASSIGN_OR_RETURN(std::string page, viz::cpu_graph_to_html(model.graph(), options));
  WEFT_RETURN_IF_ERROR(write(dir + "/model.html", page));

  // One training step: the reference backend compiles nothing, the viewer runs the
  // CPU backend's passes itself.
  TrainOptions train;
  train.backend = "reference";
  WEFT_ASSIGN_OR_RETURN(Trainer trainer, Trainer::compile(net, inputs, LossSpec::cross_entropy(),
                                                          OptimizerSpec::adam(), train));
  viz::VizOptions step_options;
  step_options.title = "@" + trainer.step_graph().name() + " (Adam training step)";
  WEFT_ASSIGN_OR_RETURN(page, viz::cpu_graph_to_html(trainer.step_graph(), step_options));
  WEFT_RETURN_IF_ERROR(write(dir + "/train_step.html", page));

  Graph step = trainer.step_graph();
  WEFT_RETURN_IF_ERROR(codegen::cpu_pipeline().run(step).status());
  WEFT_ASSIGN_OR_RETURN(MemoryPlan plan, viz::cpu_memory_plan(step));
  return write(dir + "/train_step_memory.svg", viz::memory_plan_svg(step, plan));
}

int main_impl(int argc, char** argv) {
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--out=", 0) == 0) {
      dir = cli::resolve_path(a.substr(6));
    } else if (a == "--help") {
      std::printf(
          "usage: viz_training_step --out=DIR\n"
          "Draws a labelled network and its Adam training step with the graph viewer\n"
          "(tools/viz): writes DIR/model.html (the forward network), DIR/train_step.html\n"
          "(forward, loss, backward and update, as the CPU backend runs it) and\n"
          "DIR/train_step_memory.svg (the step's memory plan).\n");
      return 0;
    } else {
      dir.clear();
      break;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: viz_training_step --out=DIR\n");
    return 1;
  }
  Status status = run(dir);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.error().to_string().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace weft

int main(int argc, char** argv) { return weft::main_impl(argc, argv); }
