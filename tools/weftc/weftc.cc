// weftc: the command-line face of weft.
//
//   weftc check FILE.wir                      parse, verify, infer types
//   weftc dump FILE.wir [--after=PASS] [--format=text|json|dot] [-o OUT] [--precision=P]
//   weftc run FILE.wir --input NAME=PATH.npy ... --out DIR [--backend=reference] [--precision=P]
//   weftc grad FILE.wir --wrt NAME,NAME,... -o OUT.wir [--output=K] [--seed=NAME] [--precision=P]
//   weftc viz FILE.wir -o model.html [--after=PASS] [--backend=cpu|reference] [--memory] [--precision=P]
//   weftc profile FILE.wir --input NAME=PATH.npy ... [--precision=P]
//   weftc migrate IN.safetensors -o OUT.safetensors [--rename OLD=NEW ...] [--prefix OLD:NEW ...]
//
// Errors are printed as `FILE:LINE:COL: error: ...` and the exit status is 1. FILE may
// be `.wir` text or its JSON form (`.json`).

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autodiff/grad.h"
#include "codegen/cpu_backend.h"
#include "codegen/targets.h"
#include "runtime/reference/numerics.h"
#include "ir/dot.h"
#include "ir/json.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/infer_types.h"
#include "passes/pipeline.h"
#include "formats/file_io.h"
#include "training/flag_values.h"
#include "formats/npy.h"
#include "formats/safetensors.h"
#include "runtime/reference/interpreter.h"
#include "tools/viz/cpu_viz.h"
#include "tools/viz/memory_picture.h"
#include "tools/viz/viz.h"
#include "runtime/out_of_memory.h"
#include "tools/weftc/args.h"
#include "tools/weftc/help.h"
#include "tools/weftc/graph_files.h"
#include "tools/weftc/migrate.h"
#include "tools/weftc/onnx_commands.h"
#include "tools/weftc/precision.h"

namespace weft::cli {
namespace {

bool wants_help(const std::vector<std::string>& argv) {
  for (const std::string& a : argv) {
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

Status write_file(const std::string& shown_path, const std::string& contents) {
  return write_file_atomically(resolve_path(shown_path), contents);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The target `weftc check --backend=NAME` checks the graph's ops against: one whose
/// device refuses some ops (Target::has_device_check); null without --backend.
StatusOr<const codegen::Target*> checked_target(const std::string& backend) {
  if (backend.empty()) return nullptr;
  StatusOr<const codegen::Target*> t = codegen::find_target(backend);
  if (t.ok() && (*t)->has_device_check()) return t;
  std::string checks;
  for (const codegen::Target& c : codegen::targets()) {
    if (!c.has_device_check()) continue;
    checks += (checks.empty() ? "" : "; ") + ("--backend=" + c.name + " checks that every op runs on " + c.device);
  }
  return Error{"weftc check: --backend=" + backend + " is not checked; " + checks};
}

Status check_command(const std::vector<std::string>& argv) {
  WEFT_ASSIGN_OR_RETURN(Args args, parse_args("check", argv, {{"out", "o"}, {"backend"}}));
  WEFT_ASSIGN_OR_RETURN(std::string file, one_file_argument("check", args));
  WEFT_ASSIGN_OR_RETURN(const codegen::Target* checked, checked_target(args.get("backend", "")));
  WEFT_ASSIGN_OR_RETURN(Graph g, load_typed_graph(file));
  if (args.has("out")) WEFT_RETURN_IF_ERROR(write_file(args.get("out"), print_graph(g)));
  std::cout << file << ": ok: @" << g.name() << ", " << g.inputs().size() << " inputs, "
            << g.nodes().size() << " nodes, " << g.outputs().size() << " outputs\n";
  if (checked != nullptr) {
    WEFT_ASSIGN_OR_RETURN(codegen::LoweredProgram p, checked->lower(g));
    WEFT_RETURN_IF_ERROR(checked->runtime()->check_program(p.program));
    std::cout << file << ": " << checked->name << ": every op runs on " << checked->device << " ("
              << p.program.code.size() << " invocations, " << p.program.kernels.size()
              << " generated kernels)\n";
  }
  return Status();
}

/// The target `weftc COMMAND --backend=NAME` names (codegen/targets.h), among those that
/// `accepts`; the error lists the ones it accepts.
template <typename Accepts>
StatusOr<const codegen::Target*> target_for(const std::string& command, const std::string& backend,
                                            Accepts accepts) {
  StatusOr<const codegen::Target*> t = codegen::find_target(backend);
  if (t.ok() && accepts(**t)) return t;
  return Error{"weftc " + command + ": unknown backend '" + backend + "'; backends: " +
               codegen::target_names(accepts)};
}

StatusOr<const codegen::Target*> target_for(const std::string& command, const std::string& backend) {
  return target_for(command, backend, [](const codegen::Target&) { return true; });
}

/// `--after=PASS` of `weftc COMMAND` on `target`: a pass that only another backend's
/// pipeline runs is an error naming that backend, where "unknown pass" would mislead (an
/// empty one is parse_args's). Other unknown names are left to the pipeline's own error.
Status check_after(const std::string& command, const Args& args, const codegen::Target& target,
                   const Pipeline& pipeline) {
  if (!args.has("after")) return Status();
  const std::string after = args.get("after");
  const std::vector<std::string_view> ours = pipeline.pass_names();
  if (after == "parse" || std::find(ours.begin(), ours.end(), after) != ours.end()) return Status();
  std::string others;
  for (const codegen::Target& t : codegen::targets()) {
    if (&t == &target || !t.pipeline) continue;
    const Pipeline theirs = t.dump_pipeline ? t.dump_pipeline({}) : t.pipeline({});
    const std::vector<std::string_view> names = theirs.pass_names();
    if (std::find(names.begin(), names.end(), after) == names.end()) continue;
    others += (others.empty() ? "--backend=" : " or --backend=") + t.name;
  }
  if (others.empty()) return Status();
  return Error{"weftc " + command + ": pass '" + after + "' is not in the " + target.name +
               " backend's pipeline; it runs with " + others};
}

/// For `weftc dump --format=FORMAT`: the target whose device code FORMAT prints (its
/// module format, "ptx"), or null for the graph's own formats (text, json, dot); an
/// error lists every format.
StatusOr<const codegen::Target*> module_format_target(const std::string& format) {
  std::string formats = "text, json, dot";
  if (format == "text" || format == "json" || format == "dot") return nullptr;
  for (const codegen::Target& t : codegen::targets()) {
    if (t.module_format.empty()) continue;
    if (t.module_format == format) return &t;
    formats += ", " + t.module_format;
  }
  return Error{"weftc dump: unknown format '" + format + "'; formats: " + formats};
}

Status dump_command(const std::vector<std::string>& argv) {
  WEFT_ASSIGN_OR_RETURN(
      Args args, parse_args("dump", argv,
                            {{"after"}, {"format"}, {"out", "o"}, {"dump-dir"}, {"backend"},
                             {"precision"}, {"no-locations", "", /*takes_value=*/false}}));
  WEFT_ASSIGN_OR_RETURN(std::string file, one_file_argument("dump", args));
  WEFT_ASSIGN_OR_RETURN(const DType precision, precision_flag(args, "dump"));
  std::string format = args.get("format", "text");
  WEFT_ASSIGN_OR_RETURN(const codegen::Target* module_target, module_format_target(format));
  std::string backend = args.get("backend", "cpu");
  WEFT_ASSIGN_OR_RETURN(const codegen::Target* target, target_for("dump", backend));
  if (module_target != nullptr) {
    if (target != module_target) {
      return Error{"weftc dump: --format=" + format + " prints the " + module_target->title +
                   " backend's kernels; add --backend=" + module_target->name};
    }
    WEFT_ASSIGN_OR_RETURN(Graph typed, load_typed_graph(file));
    WEFT_RETURN_IF_ERROR(apply_precision(typed, precision));
    WEFT_ASSIGN_OR_RETURN(codegen::LoweredProgram p, target->lower(typed));
    if (args.has("out")) return write_file(args.get("out"), p.module);
    std::cout << p.module;
    return Status();
  }
  WEFT_ASSIGN_OR_RETURN(Graph g, load_graph(file));
  std::string after = args.get("after", "infer-types");
  if (after != "parse") {
    PipelineOptions options;
    options.dump_dir = args.has("dump-dir") ? resolve_path(args.get("dump-dir")) : "";
    Pipeline pipeline = target->dump_pipeline ? target->dump_pipeline(std::move(options))
                                              : target->pipeline(std::move(options));
    WEFT_RETURN_IF_ERROR(check_after("dump", args, *target, pipeline));
    WEFT_RETURN_IF_ERROR(run_stages(g, pipeline, precision, after, "dump").status());
  }
  PrintOptions print_options;
  print_options.locations = !args.has("no-locations");
  std::string text = format == "json"  ? graph_to_json(g)
                     : format == "dot" ? graph_to_dot(g)
                                       : print_graph(g, print_options);
  if (format == "json") text += "\n";
  if (args.has("out")) return write_file(args.get("out"), text);
  std::cout << text;
  return Status();
}

Status grad_command(const std::vector<std::string>& argv) {
  WEFT_ASSIGN_OR_RETURN(Args args,
                        parse_args("grad", argv, {{"wrt"}, {"out", "o"}, {"output"}, {"seed"}, {"precision"}}));
  WEFT_ASSIGN_OR_RETURN(std::string file, one_file_argument("grad", args));
  WEFT_RETURN_IF_ERROR(output_is_not_an_input("grad", "-o", args.get("out"), {file}));
  WEFT_ASSIGN_OR_RETURN(const DType precision, precision_flag(args, "grad"));
  if (!args.has("wrt")) return Error{"weftc grad: --wrt NAME,NAME,... is required"};
  std::vector<std::string> wrt;
  std::string list = args.get("wrt");
  for (size_t start = 0; start <= list.size();) {
    size_t comma = std::min(list.find(',', start), list.size());
    std::string name = list.substr(start, comma - start);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    if (name.empty()) return Error{"weftc grad: --wrt has an empty name in '" + list + "'"};
    wrt.push_back(name);
    start = comma + 1;
  }
  WEFT_ASSIGN_OR_RETURN(const int64_t output,
                        whole_number_flag(args, "grad", "output", /*fallback=*/0, /*low=*/0,
                                          /*high=*/std::numeric_limits<int>::max()));
  WEFT_ASSIGN_OR_RETURN(Graph g, load_typed_graph(file));
  WEFT_RETURN_IF_ERROR(apply_precision(g, precision));  // before autodiff, as a training step
  WEFT_ASSIGN_OR_RETURN(Graph grad, gradient_graph(g, static_cast<int>(output), wrt, args.get("seed")));
  WEFT_RETURN_IF_ERROR(default_pipeline().run(grad));
  std::string out = args.get("out");
  std::string text = ends_with(out, ".json") ? graph_to_json(grad) + "\n" : print_graph(grad);
  if (out.empty()) {
    std::cout << text;
    return Status();
  }
  return write_file(out, text);
}

Status viz_command(const std::vector<std::string>& argv) {
  WEFT_ASSIGN_OR_RETURN(
      Args args, parse_args("viz", argv,
                            {{"out", "o"}, {"after"}, {"backend"}, {"title"}, {"precision"},
                             {"memory", "", /*takes_value=*/false}}));
  WEFT_ASSIGN_OR_RETURN(std::string file, one_file_argument("viz", args));
  WEFT_RETURN_IF_ERROR(output_is_not_an_input("viz", "-o", args.get("out"), {file}));
  WEFT_ASSIGN_OR_RETURN(const DType precision, precision_flag(args, "viz"));
  std::string backend = args.get("backend", "cpu");
  // viz draws a host arena's plan (viz::cpu_memory_plan) or the interpreter's graph.
  WEFT_ASSIGN_OR_RETURN(const codegen::Target* target,
                        target_for("viz", backend, [](const codegen::Target& t) {
                          return !t.compiled() || t.runtime()->host_input_data != nullptr;
                        }));
  const bool memory = args.has("memory");
  if (memory && !target->plans_memory()) {
    return Error{"weftc viz: --memory draws the cpu backend's memory plan; the reference "
                 "interpreter plans no memory (leave out --backend=reference)"};
  }
  WEFT_ASSIGN_OR_RETURN(Graph g, load_graph(file));
  Pipeline pipeline = target->pipeline({});
  WEFT_RETURN_IF_ERROR(check_after("viz", args, *target, pipeline));
  std::string after = args.get("after", "");
  if (after != "parse") {
    WEFT_ASSIGN_OR_RETURN(after, run_stages(g, pipeline, precision, after, "viz"));
  }
  std::optional<MemoryPlan> plan;
  if (target->plans_memory() && (after != "parse" || memory)) {
    WEFT_ASSIGN_OR_RETURN(plan, viz::cpu_memory_plan(g));
  }
  std::string text;
  if (memory) {
    text = viz::memory_plan_svg(g, *plan);
  } else {
    viz::VizOptions options;
    options.title = args.get("title", "");
    options.backend = backend;
    options.after_pass = after;
    options.plan = plan ? &*plan : nullptr;
    WEFT_ASSIGN_OR_RETURN(text, viz::graph_to_html(g, options));
  }
  if (args.has("out")) {
    WEFT_RETURN_IF_ERROR(write_file(args.get("out"), text));
    std::cout << "wrote " << args.get("out") << " (@" << g.name() << ", " << g.nodes().size()
              << " nodes" << (plan ? ", arena " + viz::format_bytes(plan->arena_bytes) : "")
              << ")\n";
    return Status();
  }
  std::cout << text;
  return Status();
}

Status make_directories(const std::string& shown_dir) {
  std::string dir = resolve_path(shown_dir);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos == dir.size() || dir[pos] == '/') {
      std::string prefix = dir.substr(0, pos);
      if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return Error{"cannot create directory '" + shown_dir + "': " + std::strerror(errno)};
      }
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Error{"cannot create directory '" + shown_dir + "': a file of that name exists"};
  }
  return Status();
}

std::string input_list(const Graph& g) {
  std::string names;
  for (const Input& in : g.inputs()) {
    names += (names.empty() ? "%" : ", %") + g.value(in.value).name;
  }
  return names.empty() ? "(none)" : names;
}

/// Reads the `--input NAME=PATH` files into graph-input order, checking each type; the
/// inputs not given take the tensor of their name in the `--params` safetensors file.
StatusOr<std::vector<Tensor>> read_inputs(const Graph& g, const std::string& file,
                                          const Args& args) {
  const std::vector<std::string> specs =
      args.flags.count("input") ? args.flags.at("input") : std::vector<std::string>{};
  std::vector<std::optional<Tensor>> given(g.inputs().size());
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return Error{"weftc run: --input expects NAME=PATH.npy, got '" + spec + "'"};
    }
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    if (!name.empty() && name[0] == '%') name = name.substr(1);
    auto v = g.find_value(name);
    int index = v ? g.input_index(*v) : -1;
    if (index < 0) {
      return Error{"weftc run: graph @" + g.name() + " in '" + file + "' has no input named %" +
                   name + "; its inputs are " + input_list(g)};
    }
    if (given[index]) return Error{"weftc run: input %" + name + " given twice"};
    WEFT_ASSIGN_OR_RETURN(Tensor t, read_npy(resolve_path(path)));
    const Input& in = g.inputs()[index];
    const Type& want = g.type(in.value);
    if (!(t.type() == want)) {
      return Error{"input %" + name + " is declared " + want.to_string() + " but '" + path +
                       "' holds " + t.type().to_string() + " (weft does not cast inputs)",
                   in.loc};
    }
    given[index] = std::move(t);
  }
  if (args.has("params")) {
    const std::string shown = args.get("params");
    WEFT_ASSIGN_OR_RETURN(SafetensorsFile params, read_params(shown));
    for (size_t i = 0; i < given.size(); ++i) {
      const Input& in = g.inputs()[i];
      const Tensor* t = given[i] ? nullptr : params.find(g.value(in.value).name);
      if (t == nullptr) continue;
      if (!(t->type() == g.type(in.value))) {
        return Error{"input %" + g.value(in.value).name + " is declared " +
                         g.type(in.value).to_string() + " but '" + shown + "' holds " +
                         t->type().to_string() + " (weft does not cast inputs)",
                     in.loc};
      }
      given[i] = *t;
    }
  }
  std::vector<Tensor> inputs;
  std::string missing;
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i]) {
      inputs.push_back(std::move(*given[i]));
    } else {
      const Input& in = g.inputs()[i];
      missing += (missing.empty() ? "" : ", ") + std::string("%") + g.value(in.value).name + " (" +
                 g.type(in.value).to_string() + ", " + std::string(input_kind_name(in.kind)) + ")";
    }
  }
  if (!missing.empty()) {
    return Error{"weftc run: missing --input for " + missing +
                 "; every graph input must be given as --input NAME=PATH.npy (or be in the "
                 "--params file)"};
  }
  return inputs;
}

/// `name` as a file name that stays in its folder: ASCII letters, digits, '_', '-' and '.'
/// are kept, any other byte and a leading '.' become %XX, so "../x" is "%2E.%2Fx", "a/b"
/// is "a%2Fb", and two different names never share a file.
std::string file_name_for(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (std::isalnum(c) || c == '_' || c == '-' || (c == '.' && i > 0)) {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

/// ` = [v0, v1, ...]` for small tensors, so a run's results can be read at a glance.
std::string preview(const Tensor& t) {
  constexpr int64_t kMax = 6;
  std::string out = " = ";
  if (t.rank() > 0) out += "[";
  for (int64_t i = 0; i < std::min(t.numel(), kMax); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", t.get_double(i));
    out += (i ? ", " : "") + std::string(buf);
  }
  if (t.numel() > kMax) out += ", ...";
  if (t.rank() > 0) out += "]";
  return out;
}

/// "N", "NK", "NM" or "NG" (KiB, MiB, GiB) as bytes; errors name the flag.
StatusOr<int64_t> parse_bytes(const std::string& flag, const std::string& text) {
  const std::optional<int64_t> bytes = parse_byte_size(text);
  if (!bytes) {
    return Error{"weftc run: " + flag + " expects a positive number of bytes (suffixes K, M, G), got '" + text + "'"};
  }
  return *bytes;
}

Status profile_command(const std::vector<std::string>& argv) {
  WEFT_ASSIGN_OR_RETURN(
      Args args, parse_args("profile", argv,
                            {{"input", "i", true, /*repeatable=*/true}, {"params"}, {"steps"}, {"warmup"}, {"top"},
                             {"html"}, {"precision"}}));
  WEFT_ASSIGN_OR_RETURN(std::string file, one_file_argument("profile", args));
  WEFT_RETURN_IF_ERROR(output_is_not_an_input("profile", "--html", args.get("html"), {file, args.get("params")}));
  WEFT_ASSIGN_OR_RETURN(const DType precision, precision_flag(args, "profile"));
  constexpr int64_t kMaxSteps = 1000000000;
  WEFT_ASSIGN_OR_RETURN(const int64_t steps, whole_number_flag(args, "profile", "steps", 20, 1, kMaxSteps));
  WEFT_ASSIGN_OR_RETURN(const int64_t warmup, whole_number_flag(args, "profile", "warmup", 3, 0, kMaxSteps));
  WEFT_ASSIGN_OR_RETURN(const int64_t top, whole_number_flag(args, "profile", "top", 25, 1, kMaxSteps));
  WEFT_ASSIGN_OR_RETURN(Graph g, load_typed_graph(file));
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, read_inputs(g, file, args));
  WEFT_RETURN_IF_ERROR(apply_precision(g, precision));
  WEFT_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Executor> ex, codegen::compile_for_cpu(g));
  for (size_t i = 0; i < inputs.size(); ++i) {
    WEFT_RETURN_IF_ERROR(ex->set_input(static_cast<int>(i), inputs[i]));
  }
  for (int64_t i = 0; i < warmup; ++i) WEFT_RETURN_IF_ERROR(ex->run());
  ex->set_profiling(true);
  for (int64_t i = 0; i < steps; ++i) WEFT_RETURN_IF_ERROR(ex->run());
  std::cout << "program @" << ex->program().name << " on " << ex->pool().num_threads()
            << " threads\n" << ex->profile_report(static_cast<int>(top));
  if (args.has("html")) {
    viz::VizOptions options;
    options.title = "profile of @" + g.name();
    const std::vector<double> us = ex->profile_us_per_step();
    for (size_t i = 0; i < us.size(); ++i) {
      const std::string& label = ex->program().code[i].label;
      options.time_us[label.substr(0, label.find(".."))] += us[i];  // "a..b": a merged update
    }
    WEFT_ASSIGN_OR_RETURN(std::string page, viz::cpu_graph_to_html(g, options));
    const std::string out = args.get("html");
    WEFT_RETURN_IF_ERROR(write_file_atomically(resolve_path(out), page));
    std::cout << "wrote " << out << "\n";
  }
  return Status();
}

Status run_command(const std::vector<std::string>& argv) {
  WEFT_ASSIGN_OR_RETURN(
      Args args, parse_args("run", argv,
                            {{"input", "i", true, /*repeatable=*/true}, {"params"}, {"out", "o"}, {"backend"},
                             {"check-numerics", "", false}, {"max-memory"}, {"precision"},
                             {"allow-host-fallback", "", false}}));
  WEFT_ASSIGN_OR_RETURN(std::string file, one_file_argument("run", args));
  WEFT_ASSIGN_OR_RETURN(const DType precision, precision_flag(args, "run"));
  if (!args.has("out")) return Error{"weftc run: --out DIR is required (see weftc run --help)"};
  std::string backend = args.get("backend", "cpu");
  WEFT_ASSIGN_OR_RETURN(const codegen::Target* target, target_for("run", backend));
  codegen::CompileOptions options{.check_numerics = args.has("check-numerics"),
                                  .allow_host_fallback = args.has("allow-host-fallback")};
  if (options.check_numerics && !target->has_check_numerics()) {
    return Error{"weftc run: " + target->check_numerics_unsupported("--check-numerics").message};
  }
  WEFT_ASSIGN_OR_RETURN(Graph g, load_typed_graph(file));
  WEFT_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, read_inputs(g, file, args));
  WEFT_RETURN_IF_ERROR(apply_precision(g, precision));
  if (args.has("max-memory")) {
    WEFT_ASSIGN_OR_RETURN(options.bind.max_memory, parse_bytes("--max-memory", args.get("max-memory")));
  }
  WEFT_ASSIGN_OR_RETURN(reference::RunResult result, target->run(g, std::move(inputs), options));

  // Every file is named and checked before the first is written.
  std::vector<std::pair<std::string, const Tensor*>> files;  // (file name, tensor)
  std::map<std::string, std::string> written_for;            // file name -> what it holds
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    files.emplace_back("out_" + std::to_string(i) + ".npy", &result.outputs[i]);
    written_for[files.back().first] = "output " + std::to_string(i);
  }
  for (const auto& [name, t] : result.updated) {
    files.emplace_back(file_name_for(name) + ".npy", &t);
    auto [it, fresh] = written_for.emplace(files.back().first, "%" + name);
    if (!fresh) {
      return Error{"weftc run: the updated input %" + name + " would be written to '" +
                   files.back().first + "', the file of " + it->second +
                   "; rename the input in '" + file + "'"};
    }
  }
  // Every output's dtype checked before the first is written (npy_descr: empty where .npy
  // has no dtype for it, bf16).
  for (const auto& [name, t] : files) {
    if (!npy_descr(t->dtype()).empty()) continue;
    return Error{"weftc run: " + written_for.at(name) + " is " + t->type().to_string() +
                 ", which .npy cannot hold (NumPy has no bfloat16 dtype): cast it to f32 in '" + file +
                 "'; nothing was written"};
  }
  std::string dir = args.get("out");
  WEFT_RETURN_IF_ERROR(make_directories(dir));
  for (const auto& [name, t] : files) {
    std::string shown = dir + "/" + name;
    WEFT_RETURN_IF_ERROR(write_npy(resolve_path(shown), *t));
    std::cout << "wrote " << shown << "  " << t->type().to_string() << preview(*t) << "\n";
  }
  return Status();
}

int main_impl(int argc, char** argv) {
  std::vector<std::string> rest(argv + std::min(argc, 2), argv + argc);
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? 1 : 0;
  }
  std::string command = argv[1];
  struct Command {
    const char* help;
    std::function<Status(const std::vector<std::string>&)> run;
  };
  const std::map<std::string, Command> commands = {
      {"check", {kCheckHelp, check_command}},
      {"dump", {kDumpHelp, dump_command}},
      {"run", {kRunHelp, run_command}},
      {"grad", {kGradHelp, grad_command}},
      {"profile", {kProfileHelp, profile_command}},
      {"viz", {kVizHelp, viz_command}},
      {"migrate", {kMigrateHelp, migrate_command}},
      {"import", {kImportHelp, import_command}},
      {"export", {kExportHelp, export_command}},
  };
  auto it = commands.find(command);
  if (it == commands.end()) {
    std::cerr << "error: unknown command '" << command << "'\n\n" << kUsage;
    return 1;
  }
  if (wants_help(rest)) {
    std::cout << it->second.help;
    return 0;
  }
  Status status = it->second.run(rest);
  if (!status.ok()) {
    std::cerr << status.error().to_string() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace weft::cli

int main(int argc, char** argv) {
  return weft::run_guarded("weftc", [&] { return weft::cli::main_impl(argc, argv); });
}
