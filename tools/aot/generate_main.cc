// The AOT generator: linked with a model source (tools/aot/model.h) into a tool by the
// weft_library macro (tools/aot/weft.bzl), built for the target (which must be the build
// machine) and run by the macro's WeftGenerate action at build time.
//
//   NAME_generator --name=NAME --class=ns::Class --include=pkg/NAME.h
//       --header=NAME.h --source=NAME.cc --factory=NAME_factory.cc
//       --step_source=NAME_step.cc --eval_source=NAME_eval.cc --weights=NAME_weights.inc
//       --object=NAME.o
//       --batch=128 --loss=cross_entropy --optimizer=adam --lr=0.001 ... [--precision=bf16]
//
// It builds the training step exactly as Trainer::compile does (it compiles a Trainer on
// the reference backend and takes its step graph, parameter table and optimizer slots;
// at --precision, its autocast and, for f16, its loss scaling),
// builds the eval-mode forward as Trainer::evaluate does, and lowers both for --backend
// (its codegen::Target's `lower`, codegen/targets.h: the Programs the JIT path runs).
// What is device-specific it asks that Target and its runtime Backend, never the name:
// how the kernels travel (Target::aot_code),
//   object  every kernel of both Programs compiled into one object file (--object;
//           Target::compile_object, for --cpu): cpu;
//   module  each Program's kernels as one module, written into its source as a string
//           constant with the kernels' entry symbols (no object file, no --object):
//           cuda, PTX;
// whether the typed buffers are the executors' own (Backend::host_input_data) and which
// ops the device would refuse (Backend::check_program). It writes (the text:
// generated_text.cc):
//   NAME_step.cc / NAME_eval.cc   the Programs (codegen/program_source.h), + the module
//   NAME.h / NAME.cc              the ModelTable (training/aot/compiled_model.h) and a
//                                 typed class over CompiledModel (typed input buffers)
//   NAME_factory.cc               driver::make_compiled_model, for weft_binary
//   NAME_weights.inc              the bytes of stored initializers (an imported model's
//                                 weights) and of the eval forward as an ONNX model
//                                 without its weights (--export-onnx), which NAME.cc
//                                 embeds with `.incbin`
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/program_source.h"
#include "codegen/targets.h"
#include "frontend/training.h"
#include "interop/onnx/exporter.h"
#include "runtime/backend.h"
#include "runtime/collective/communicator.h"
#include "formats/file_io.h"
#include "training/init.h"
#include "training/step_inputs.h"
#include "tools/aot/generated_text.h"
#include "tools/aot/model.h"
#include "tools/aot/options.h"

namespace weft::aot {
namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "weft AOT generator: %s\n", message.c_str());
  return 1;
}

// The generator's own flags: the output paths and names (the rest are CompileOptions).
const std::vector<std::string> kOwnFlags = {"name", "class", "include", "header", "source", "factory",
                                            "step_source", "eval_source", "weights", "object"};

// The values of the own flags in `args`; each is required but --object (the object form
// only).
Status read_paths(const std::vector<std::string>& args, std::map<std::string, std::string>& paths) {
  const std::vector<std::string> optional = {"object"};
  for (const std::string& a : args) {
    for (const std::string& f : kOwnFlags) {
      if (a.rfind("--" + f + "=", 0) == 0) paths[f] = a.substr(f.size() + 3);
    }
  }
  for (const std::string& f : kOwnFlags) {
    if (!paths.count(f) && std::find(optional.begin(), optional.end(), f) == optional.end()) {
      return Error{"--" + f + "=... is required (the weft_library macro passes it)"};
    }
  }
  return Status();
}

// The target, the names of the model and of its class, and where the files go.
Status name_outputs(Generated& g, const CompileOptions& options,
                    std::map<std::string, std::string>& paths) {
  g.target = *codegen::find_target(options.backend);  // options.cc admits the compiled targets
  if (g.object() != (paths.count("object") > 0)) {
    return Error{g.object() ? "--object=... is required for --backend=" + options.backend
                            : "--backend=" + options.backend + " writes no object file: drop --object"};
  }
  g.name = paths["name"];
  g.weights_path = paths["weights"];
  g.symbol = identifier(g.name);
  g.include = paths["include"];
  g.options = options;
  const std::string cls = paths["class"];
  const size_t colon = cls.rfind("::");
  g.ns = colon == std::string::npos ? "" : cls.substr(0, colon);
  g.cls = colon == std::string::npos ? cls : cls.substr(colon + 2);
  return Status();
}

// The table's facts about the model: its hashes and checkpoint schema, the optimizer's
// rates, and the values (its parameters; the optimizer slots follow in lower_step).
void describe_model(Generated& g, const Trainer& trainer, const OptimizerSpec& optimizer) {
  const Model& model = trainer.model();
  g.structural_hash = model.structural_hash();
  const CheckpointSchema schema = checkpoint_schema(model);
  g.subgraphs = schema.subgraphs;
  g.checkpoint_batch = schema.batch;
  g.lr = optimizer.lr;
  g.momentum = optimizer.first_momentum();
  g.accumulate_steps = optimizer.accumulate_steps;
  for (size_t i = 0; i < optimizer.groups.size(); ++i) {
    g.group_lrs.emplace_back(optimizer.groups[i].path, optimizer.group_spec(i).lr);
  }
  for (const ParamInfo& p : model.parameters()) {
    g.values.push_back({p.name, model.graph().type(p.value), p.kind, p.init});
  }
  g.num_model_values = static_cast<int>(g.values.size());
}

// The training step lowered for the target into `step`: the optimizer slots as values,
// the step's inputs, and whether the device refuses the Program.
Status lower_step(Generated& g, const Trainer& trainer, const std::vector<InputSpec>& inputs,
                  Lowered& step) {
  const Graph& step_graph = trainer.step_graph();
  std::map<std::string, Type> step_types;
  for (const Input& in : step_graph.inputs()) {
    step_types[step_graph.value(in.value).name] = step_graph.type(in.value);
  }
  for (const OptimizerSlot& s : trainer.optimizer_slots()) {
    g.values.push_back({s.name, step_types.at(s.name), InputKind::state, s.init});
  }
  for (const InputSpec& in : inputs) g.step_inputs.push_back({in.name, in.type});
  g.step_inputs.push_back({kTarget, step_types.at(kTarget)});
  StatusOr<Lowered> p = g.target->lower(step_graph);
  if (!p.ok()) return Error{"lowering the training step: " + p.error().to_string()};
  step = std::move(*p);
  g.step = &step.program;
  if (const Backend* device = g.target->runtime(); device->check_program != nullptr) {
    if (Status s = device->check_program(step.program); !s.ok()) g.refused = s.error().to_string();
  }
  return Status();
}

// The eval-mode forward at the eval batch, as Trainer::evaluate builds it, lowered into
// `eval`; its inputs and outputs go to the table, and it is exported as ONNX
// (--export-onnx): a model the exporter refuses still builds, and its binary refuses
// --export-onnx with the exporter's reason.
Status lower_eval(Generated& g, const ModelSource& src, const CompileOptions& options, Lowered& eval) {
  const int64_t eval_batch = options.eval_batch > 0 ? options.eval_batch : options.batch;
  std::vector<InputSpec> eval_specs = src.inputs;
  for (InputSpec& s : eval_specs) {
    if (s.type.shape.rank() > 0) s.type.shape.dims[0] = eval_batch;
  }
  BuildOptions eval_build;
  eval_build.training = false;
  StatusOr<Model> eval_model = src.net->build(eval_specs, eval_build);
  if (!eval_model.ok()) return Error{"building the eval forward: " + eval_model.error().to_string()};
  for (const InputSpec& in : eval_specs) g.eval_inputs.push_back({in.name, in.type});
  for (ValueId out : eval_model->graph().outputs()) {
    g.eval_outputs.push_back({"output." + std::to_string(g.eval_outputs.size()),
                              eval_model->graph().type(out)});
  }
  StatusOr<Lowered> p = g.target->lower(eval_model->graph());
  if (!p.ok()) return Error{"lowering the eval forward: " + p.error().to_string()};
  eval = std::move(*p);
  g.eval = &eval.program;

  StatusOr<onnx_io::WeightlessModel> onnx = onnx_io::export_weightless(eval_model->graph(), {.graph_name = g.name});
  if (onnx.ok()) {
    g.onnx = std::move(*onnx);
  } else {
    g.onnx_refused = onnx.error().to_string();
  }
  return Status();
}

// The weights file: each stored initializer, then the ONNX model, at 64-byte offsets.
void embed_weights(Generated& g) {
  for (ValueEntry& v : g.values) {
    if (v.init.kind != Initializer::Kind::Stored) continue;
    g.weights.resize((g.weights.size() + 63) / 64 * 64, '\0');
    v.stored_offset = static_cast<int64_t>(g.weights.size());
    g.weights += v.init.stored->bytes;
  }
  g.weights.resize((g.weights.size() + 63) / 64 * 64, '\0');
  g.onnx_offset = static_cast<int64_t>(g.weights.size());
  g.weights += g.onnx.model;
}

// Every file, written once all are made (the object form's object file compiled last).
Status write_outputs(const Generated& g, std::map<std::string, std::string>& paths,
                     const Lowered& step, const Lowered& eval) {
  std::vector<std::pair<std::string, std::string>> files = {
      {paths["weights"], g.weights},
      {paths["step_source"], g.step ? program_source(step, g.symbol + "_step", *g.target)
                                    : "// " + g.name + " is inference-only: no training step.\n"},
      {paths["eval_source"], program_source(eval, g.symbol + "_eval", *g.target)},
      {paths["header"], header(g)},
      {paths["source"], source(g)},
      {paths["factory"], factory(g)},
  };
  if (g.object()) {
    std::vector<codegen::NamedProgram> programs = {{g.symbol + "_eval", g.eval}};
    if (g.step != nullptr) programs.insert(programs.begin(), {g.symbol + "_step", g.step});
    StatusOr<std::string> object = g.target->compile_object(programs, g.options.cpu);
    if (!object.ok()) return Error{object.error().to_string()};
    files.push_back({paths["object"], *object});
  }
  for (const auto& [path, text] : files) {
    if (Status s = write_file_atomically(path, text); !s.ok()) return Error{s.to_string()};
  }
  return Status();
}

int run(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::map<std::string, std::string> paths;
  if (Status s = read_paths(args, paths); !s.ok()) return fail(s.error().message);
  StatusOr<CompileOptions> options = parse_compile_options(args, kOwnFlags);
  if (!options.ok()) return fail(options.error().to_string());
  Generated g;
  if (Status s = name_outputs(g, *options, paths); !s.ok()) return fail(s.error().message);

  StatusOr<ModelSource> src = weft_model(options->batch, options->dtype);
  if (!src.ok()) return fail("weft_model: " + src.error().to_string());
  StatusOr<LossSpec> loss = options->loss_spec();
  StatusOr<OptimizerSpec> optimizer = options->optimizer_spec();
  if (!loss.ok() || !optimizer.ok()) return fail("bad options");

  // The training step, built by the Trainer itself (reference backend: nothing is
  // compiled here), so its graph, parameter table and slots are the JIT path's. With
  // --data_parallel, the data-parallel step: an all_reduce mean on every gradient (after
  // the accumulator, on the window's last micro-batch only: append_optimizer) and on the
  // loss, which the binary runs through the communicator
  // it is given (CompiledModel::Options) — with one process they change nothing, so the
  // same library trains alone or under mpirun.
  // With --precision, the mixed-precision step the Trainer builds (autocast, and for f16
  // dynamic loss scaling, whose state the optimizer slots list); with --fuse_attention, its
  // attention pattern as one attention node and one attention_grad.
  TrainOptions train{.seed = 0,
                     .backend = "reference",
                     .fuse_attention = options->fuse_attention,
                     .precision = options->precision};
  if (options->data_parallel) train.bind.communicator = collective::single_process();
  StatusOr<Trainer> trainer =
      Trainer::compile(src->net, src->inputs, *loss, *optimizer, train, src->where);
  if (!trainer.ok()) return fail(trainer.error().to_string());
  describe_model(g, *trainer, *optimizer);

  Lowered step, eval;
  if (!options->inference_only) {
    if (Status s = lower_step(g, *trainer, src->inputs, step); !s.ok()) return fail(s.error().message);
  }
  if (Status s = lower_eval(g, *src, *options, eval); !s.ok()) return fail(s.error().message);
  embed_weights(g);
  if (Status s = write_outputs(g, paths, step, eval); !s.ok()) return fail(s.error().message);
  std::printf("%s (%s): step %zu invocations, %zu kernels, arena %lld bytes; eval %zu invocations, "
              "%zu kernels; %zu values\n",
              g.name.c_str(), g.options.backend.c_str(), step.program.code.size(),
              step.program.kernels.size(), static_cast<long long>(step.program.arena_bytes),
              eval.program.code.size(), eval.program.kernels.size(), g.values.size());
  return 0;
}

}  // namespace
}  // namespace weft::aot

int main(int argc, char** argv) { return weft::aot::run(argc, argv); }
