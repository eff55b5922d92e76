#include "tools/weftc/onnx_commands.h"

#include <filesystem>
#include <iostream>

#include "formats/file_io.h"
#include "formats/safetensors.h"
#include "interop/onnx/exporter.h"
#include "interop/onnx/importer.h"
#include "ir/json.h"
#include "ir/text.h"
#include "ir/text_util.h"
#include "tools/weftc/args.h"
#include "tools/weftc/graph_files.h"

namespace weft::cli {
namespace {

// `NAME=VALUE` split at the first '='; an error names the flag and what it expects.
StatusOr<std::pair<std::string, std::string>> name_value(const std::string& flag,
                                                         const std::string& spec,
                                                         const std::string& expects) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return Error{"weftc import: " + flag + " expects " + expects + ", got '" + spec + "'"};
  }
  return std::make_pair(spec.substr(0, eq), spec.substr(eq + 1));
}

// A dimension's size in a flag: a whole number from 0 to 2^40.
StatusOr<int64_t> dim_size(const std::string& flag, const std::string& spec, const std::string& text) {
  const FlagNumber<int64_t> n = parse_whole_number(text);
  if (!n.ok() || n.value < 0 || n.value > (int64_t{1} << 40)) {
    return Error{"weftc import: " + flag + " '" + spec + "': '" + text +
                 "' is not a dimension size (a whole number from 0 to 2^40)"};
  }
  return n.value;
}

// --dim NAME=N and --input-shape NAME=AxBxC (`NAME=scalar` for rank 0).
StatusOr<onnx_io::ImportOptions> import_options(const Args& args) {
  onnx_io::ImportOptions o;
  for (const std::string& spec : args.flags.count("dim") ? args.flags.at("dim") : std::vector<std::string>{}) {
    WEFT_ASSIGN_OR_RETURN(auto nv, name_value("--dim", spec, "NAME=SIZE"));
    WEFT_ASSIGN_OR_RETURN(int64_t n, dim_size("--dim", spec, nv.second));
    if (!o.dims.emplace(nv.first, n).second) {
      return Error{"weftc import: --dim " + nv.first + " given twice (" + nv.first + "=" +
                   std::to_string(o.dims.at(nv.first)) + " and " + spec + ")"};
    }
  }
  for (const std::string& spec :
       args.flags.count("input-shape") ? args.flags.at("input-shape") : std::vector<std::string>{}) {
    WEFT_ASSIGN_OR_RETURN(auto nv, name_value("--input-shape", spec, "NAME=AxBxC (or NAME=scalar)"));
    std::vector<int64_t> dims;
    if (nv.second != "scalar") {
      size_t start = 0;
      while (true) {
        const size_t x = nv.second.find('x', start);
        WEFT_ASSIGN_OR_RETURN(int64_t d, dim_size("--input-shape", spec, nv.second.substr(start, x - start)));
        dims.push_back(d);
        if (x == std::string::npos) break;
        start = x + 1;
      }
    }
    if (!o.input_shapes.emplace(nv.first, Shape(dims)).second) {
      return Error{"weftc import: --input-shape " + nv.first + " given twice"};
    }
  }
  return o;
}

std::string replace_extension(const std::string& path, const std::string& ext) {
  return std::filesystem::path(path).replace_extension(ext).string();
}

}  // namespace

Status import_command(const std::vector<std::string>& argv) {
  WEFT_ASSIGN_OR_RETURN(
      Args args, parse_args("import", argv,
                            {{"out", "o"},
                             {"weights"},
                             {"dim", "", /*takes_value=*/true, /*repeatable=*/true},
                             {"input-shape", "", /*takes_value=*/true, /*repeatable=*/true},
                             {"training", "", /*takes_value=*/false}}));
  WEFT_ASSIGN_OR_RETURN(std::string file, one_file_argument("import", args));
  if (!args.has("out")) return Error{"weftc import: -o OUT.wir is required (see weftc import --help)"};
  const std::string out = args.get("out");
  const std::string weights = args.get("weights", replace_extension(out, ".safetensors"));
  if (weights == out) return Error{"weftc import: --weights must differ from -o ('" + out + "')"};
  WEFT_RETURN_IF_ERROR(output_is_not_an_input("import", "-o", out, {file}));
  WEFT_RETURN_IF_ERROR(output_is_not_an_input("import", "--weights", weights, {file}));
  WEFT_ASSIGN_OR_RETURN(onnx_io::ImportOptions options, import_options(args));

  StatusOr<onnx_io::OnnxFile> model = onnx_io::read_onnx_model(resolve_path(file));
  if (!model.ok()) return model.error();
  WEFT_ASSIGN_OR_RETURN(onnx_io::ImportedGraph g,
                        onnx_io::import_onnx(*model, options, args.has("training")));

  const std::string text = out.ends_with(".json") ? graph_to_json(g.graph) : print_graph(g.graph);
  std::vector<std::pair<std::string, Tensor>> tensors;
  int64_t params = 0, elements = 0;
  for (const ParamInfo& p : g.params) {
    tensors.emplace_back(p.name, g.values.at(p.name));
    if (p.kind == InputKind::param) ++params;
    elements += tensors.back().second.numel();
  }
  // The weights first: a graph file never names values that were not written.
  WEFT_RETURN_IF_ERROR(write_safetensors(resolve_path(weights), tensors,
                                         {{"weft.source", std::filesystem::path(file).filename().string()}}));
  WEFT_RETURN_IF_ERROR(write_file_atomically(resolve_path(out), text));
  const auto state = static_cast<int64_t>(g.params.size()) - params;
  std::cout << "imported " << counted(model->model.graph().node_size(), "ONNX node") << " (opset "
            << model->opset << ") as " << counted(static_cast<int64_t>(g.graph.nodes().size()), "weft op") << "; "
            << counted(params, "parameter") << " and " << counted(state, "state input") << " ("
            << counted(elements, "value") << ")\n"
            << "wrote " << out << " and " << weights << "\n";
  return Status();
}

Status export_command(const std::vector<std::string>& argv) {
  WEFT_ASSIGN_OR_RETURN(Args args, parse_args("export", argv, {{"out", "o"}, {"params"}}));
  WEFT_ASSIGN_OR_RETURN(std::string file, one_file_argument("export", args));
  if (!args.has("out")) return Error{"weftc export: -o OUT.onnx is required (see weftc export --help)"};
  WEFT_RETURN_IF_ERROR(output_is_not_an_input("export", "-o", args.get("out"), {file, args.get("params")}));
  WEFT_ASSIGN_OR_RETURN(Graph g, load_typed_graph(file));
  std::map<std::string, Tensor> values;
  if (args.has("params")) {
    WEFT_ASSIGN_OR_RETURN(SafetensorsFile params, read_params(args.get("params")));
    for (auto& [name, t] : params.tensors) values.emplace(name, std::move(t));
  }
  std::string missing;
  for (const Input& in : g.inputs()) {
    const std::string& name = g.value(in.value).name;
    if (in.kind != InputKind::data && !values.count(name)) missing += (missing.empty() ? "%" : ", %") + name;
  }
  if (!missing.empty()) {
    return Error{"weftc export: no value for " + missing +
                 "; parameters and state become initializers: give them with --params=FILE.safetensors"};
  }
  WEFT_ASSIGN_OR_RETURN(onnx::ModelProto model, onnx_io::export_onnx(g, values));
  WEFT_RETURN_IF_ERROR(onnx_io::write_onnx_model(resolve_path(args.get("out")), model));
  std::cout << "exported " << counted(static_cast<int64_t>(g.nodes().size()), "weft op") << " as "
            << counted(model.graph().node_size(), "ONNX node") << " (opset " << onnx_io::kExportOpset << "), "
            << counted(model.graph().initializer_size(), "initializer") << "; wrote " << args.get("out") << "\n";
  return Status();
}

}  // namespace weft::cli
