#include "tools/onnx_conformance/conformance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <regex>
#include <set>

#include "codegen/targets.h"
#include "interop/onnx/importer.h"
#include "interop/onnx/reader.h"
#include "ir/text_util.h"
#include "ir/verifier.h"

namespace weft::onnx_conformance {
namespace fs = std::filesystem;

const std::vector<std::string>& all_categories() {
  static const std::vector<std::string> all = {"node", "pytorch-converted", "pytorch-operator",
                                               "simple"};
  return all;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::passed: return "passed";
    case Verdict::failed: return "failed";
    case Verdict::refused: return "refused";
  }
  return "?";
}

StatusOr<std::vector<Case>> find_cases(const std::string& data_dir,
                                       const std::vector<std::string>& categories,
                                       const std::string& filter) {
  std::vector<Case> out;
  for (const std::string& category : categories) {
    if (std::find(all_categories().begin(), all_categories().end(), category) ==
        all_categories().end()) {
      std::string known;
      for (const std::string& k : all_categories()) known += (known.empty() ? "" : ", ") + k;
      return Error{"unknown category '" + category + "'; categories: " + known};
    }
    const fs::path dir = fs::path(data_dir) / category;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return Error{"no folder '" + dir.string() + "' (tools/setup installs libonnx-testdata; "
                   "--data-dir chooses another)"};
    }
    std::vector<Case> found;
    for (const fs::directory_entry& d : fs::directory_iterator(dir, ec)) {
      const std::string name = d.path().filename().string();
      if (!fs::exists(d.path() / "model.onnx")) continue;
      if (name.find(filter) == std::string::npos) continue;
      found.push_back({category, name, d.path().string()});
    }
    std::sort(found.begin(), found.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

namespace {

// `digits` significant digits: 6 for an error, 9 for an element (every f32 apart).
std::string number(double v, int digits = 6) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// `[1,0]`: the multi-index of flat element `i` of `shape`.
std::string index_of(const Shape& shape, int64_t i) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = i % shape[d];
    i /= shape[d];
  }
  std::string out = "[";
  for (size_t d = 0; d < idx.size(); ++d) out += (d ? "," : "") + std::to_string(idx[d]);
  return out + "]";
}

// Element i as an exact integer (i64 beyond 2^53 included).
int64_t integer_at(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::i64) return t.data<int64_t>()[i];
  return static_cast<int64_t>(t.get_double(i));
}

}  // namespace

Comparison compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (actual.type() != expected.type()) {
    return {false, actual.type().to_string() + " where " + expected.type().to_string() + " was expected",
            kInf};
  }
  const bool exact = !is_floating(expected.dtype());
  int64_t differ = 0;
  int64_t worst = -1;
  double worst_error = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double error = 0;
    bool ok = true;
    if (exact) {
      const int64_t a = integer_at(actual, i), e = integer_at(expected, i);
      ok = a == e;
      error = ok ? 0 : std::fabs(static_cast<double>(a) - static_cast<double>(e));
    } else {
      const double a = actual.get_double(i), e = expected.get_double(i);
      if (std::isnan(a) || std::isnan(e)) {
        ok = std::isnan(a) && std::isnan(e);
        error = ok ? 0 : kInf;
      } else if (std::isinf(a) || std::isinf(e)) {
        ok = a == e;
        error = ok ? 0 : kInf;
      } else {
        error = std::fabs(a - e);
        ok = error <= tol.atol + tol.rtol * std::fabs(e);
      }
    }
    if (!ok) ++differ;
    if (!ok && error > worst_error) {
      worst_error = error;
      worst = i;
    }
  }
  if (differ == 0) return {};
  const std::string at = index_of(expected.shape(), worst);
  return {false,
          std::to_string(differ) + " of " + counted(expected.numel(), "element") +
              (differ == 1 ? " differs" : " differ") + "; the largest |error| is " + number(worst_error) + " at " + at + ": " +
              number(actual.get_double(worst), 9) + " where " + number(expected.get_double(worst), 9) +
              " was expected",
          worst_error};
}

namespace {

void collect_op_types(const onnx::GraphProto& g, std::set<std::string>& out) {
  for (const onnx::NodeProto& n : g.node()) {
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    out.insert(default_domain ? n.op_type() : n.domain() + "." + n.op_type());
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) collect_op_types(a.g(), out);
      for (const onnx::GraphProto& sub : a.graphs()) collect_op_types(sub, out);
    }
  }
}

std::vector<std::string> op_types_of(const onnx_io::OnnxFile& file) {
  std::set<std::string> types;
  collect_op_types(file.model.graph(), types);
  return {types.begin(), types.end()};
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Why the model's interface is not all tensors (a sequence input, an optional output),
// or "": its test data would not read as tensors.
std::string non_tensor_interface(const onnx::GraphProto& g) {
  auto kind = [](const onnx::TypeProto& t) -> std::string {
    switch (t.value_case()) {
      case onnx::TypeProto::kTensorType: return "";
      case onnx::TypeProto::kSequenceType: return "a sequence";
      case onnx::TypeProto::kMapType: return "a map";
      case onnx::TypeProto::kOptionalType: return "an optional";
      case onnx::TypeProto::kSparseTensorType: return "a sparse tensor";
      default: return "not a tensor";
    }
  };
  for (const auto* list : {&g.input(), &g.output()}) {
    for (const onnx::ValueInfoProto& v : *list) {
      if (const std::string k = kind(v.type()); !k.empty()) {
        return std::string(list == &g.input() ? "input" : "output") + " '" + v.name() + "' is " + k +
               "; weft's values are tensors";
      }
    }
  }
  return "";
}

// The tensors `prefix`_0.pb, `prefix`_1.pb... of one data set, in order.
StatusOr<std::vector<Tensor>> read_tensors(const fs::path& set_dir, const std::string& prefix) {
  std::vector<Tensor> out;
  for (int k = 0;; ++k) {
    const fs::path p = set_dir / (prefix + "_" + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    WEFT_ASSIGN_OR_RETURN(Tensor t, onnx_io::read_onnx_tensor(p.string()));
    out.push_back(std::move(t));
  }
  return out;
}

struct DataSet {
  std::string name;  // "test_data_set_0"
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
};

StatusOr<std::vector<DataSet>> read_data_sets(const Case& c) {
  std::vector<DataSet> sets;
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator(c.dir, ec)) {
    const std::string name = d.path().filename().string();
    if (!d.is_directory() || !name.starts_with("test_data_set_")) continue;
    DataSet s{name, {}, {}};
    StatusOr<std::vector<Tensor>> in = read_tensors(d.path(), "input");
    if (!in.ok()) return Error{"test data: " + in.error().message};
    StatusOr<std::vector<Tensor>> out = read_tensors(d.path(), "output");
    if (!out.ok()) return Error{"test data: " + out.error().message};
    s.inputs = std::move(*in);
    s.outputs = std::move(*out);
    sets.push_back(std::move(s));
  }
  if (sets.empty()) return Error{"the case has no test_data_set_* folder"};
  std::sort(sets.begin(), sets.end(), [](const DataSet& a, const DataSet& b) { return a.name < b.name; });
  return sets;
}

BackendResult compare_outputs(const std::vector<Tensor>& actual, const DataSet& set, Tolerance tol) {
  BackendResult r{Verdict::passed, "", 0};
  if (actual.size() != set.outputs.size()) {
    return {Verdict::failed,
            set.name + ": " + std::to_string(actual.size()) + " outputs where " +
                std::to_string(set.outputs.size()) + " were expected",
            std::numeric_limits<double>::infinity()};
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    Comparison c = compare_tensors(actual[i], set.outputs[i], tol);
    if (c.close) continue;
    if (r.verdict == Verdict::passed || c.max_error > r.max_error) {
      r = {Verdict::failed, set.name + ": output " + std::to_string(i) + ": " + c.detail, c.max_error};
    }
  }
  return r;
}

// The verdicts of one import on every backend, data set by data set (the worst wins).
void run_backends(const onnx_io::ImportedGraph& g, const DataSet& set,
                  const std::map<std::string, Tensor>& named,
                  const std::vector<std::string>& backends, Tolerance tol, CaseResult& out) {
  StatusOr<std::vector<Tensor>> inputs = g.inputs_with(named);
  if (!inputs.ok()) {
    for (const std::string& b : backends) out.backends[b] = {Verdict::refused, inputs.error().message, 0};
    return;
  }
  for (const std::string& b : backends) {
    BackendResult& slot = out.backends[b];
    if (slot.verdict != Verdict::passed) continue;  // an earlier set already decided
    StatusOr<const codegen::Target*> target = codegen::find_target(b);
    if (!target.ok()) {
      slot = {Verdict::refused, target.error().message, 0};
      continue;
    }
    // One thread per case: the runner runs cases side by side (--jobs).
    StatusOr<reference::RunResult> r = (*target)->run(g.graph, *inputs, {.bind = {.num_threads = 1}});
    if (!r.ok()) {
      slot = {Verdict::refused, first_line(r.error().message), 0};
      continue;
    }
    slot = compare_outputs(r->outputs, set, tol);
  }
}

// The data inputs among `name`'s ancestors in `g` (what the model computes it from).
std::set<std::string> data_inputs_feeding(const onnx::GraphProto& g, const std::string& name,
                                          const std::map<std::string, Tensor>& data) {
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const onnx::NodeProto& n : g.node()) {
    for (const std::string& out : n.output()) producer[out] = &n;
  }
  std::set<std::string> inputs, seen;
  std::vector<std::string> todo = {name};
  while (!todo.empty()) {
    const std::string v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second) continue;
    if (data.count(v)) inputs.insert(v);
    if (auto it = producer.find(v); it != producer.end()) {
      for (const std::string& in : it->second->input()) todo.push_back(in);
    }
  }
  return inputs;
}

// Imports `file` with `options`; where the import needs a value at import time that the
// test feeds as an input (a shape, axes, pads: weft's shapes are static), fixes this data
// set's value of that input (ImportOptions::constant_inputs, which the caller reports)
// and imports again. A needed value the model computes from its inputs (a Loop's trip
// count from Range's start, limit and delta) fixes the inputs it is computed from; one
// the graph does not show computed (inside a subgraph) fixes every non-float input.
StatusOr<onnx_io::ImportedGraph> import_fixing_inputs(const onnx_io::OnnxFile& file,
                                                      const std::map<std::string, Tensor>& named,
                                                      onnx_io::ImportOptions& options) {
  auto fix = [&](const std::string& name, const Tensor& t) {
    options.constant_inputs.emplace(name, t);
    options.input_shapes.erase(name);
  };
  while (true) {
    std::vector<std::string> needed;
    options.needs_constant = &needed;
    StatusOr<onnx_io::ImportedGraph> g = onnx_io::import_onnx(file, options);
    options.needs_constant = nullptr;
    if (g.ok() || needed.empty()) return g;
    const size_t before = options.constant_inputs.size();
    for (const std::string& name : needed) {
      for (const std::string& in : data_inputs_feeding(file.model.graph(), name, named)) fix(in, named.at(in));
    }
    if (options.constant_inputs.size() == before) {
      for (const auto& [name, t] : named) {
        if (!is_floating(t.dtype())) fix(name, t);
      }
    }
    if (options.constant_inputs.size() == before) return g;  // nothing more to fix
  }
}

}  // namespace

std::vector<std::string> model_op_types(const std::string& model_path) {
  StatusOr<onnx_io::OnnxFile> file = onnx_io::read_onnx_model(model_path);
  return file.ok() ? op_types_of(*file) : std::vector<std::string>{};
}

CaseResult run_case(const Case& c, const std::vector<std::string>& backends, Tolerance tol) {
  CaseResult out{c.category, c.name, {}, {}};
  auto all = [&](Verdict v, const std::string& detail, double error = 0) {
    for (const std::string& b : backends) out.backends[b] = {v, detail, error};
  };
  try {
    StatusOr<onnx_io::OnnxFile> file = onnx_io::read_onnx_model((fs::path(c.dir) / "model.onnx").string());
    if (!file.ok()) {
      all(Verdict::refused, first_line(file.error().message));
      return out;
    }
    out.op_types = op_types_of(*file);
    if (const std::string why = non_tensor_interface(file->model.graph()); !why.empty()) {
      all(Verdict::refused, why);
      return out;
    }
    StatusOr<std::vector<DataSet>> sets = read_data_sets(c);
    if (!sets.ok()) {
      all(Verdict::refused, first_line(sets.error().message));
      return out;
    }
    all(Verdict::passed, "");
    for (const DataSet& set : *sets) {
      StatusOr<std::map<std::string, Tensor>> data = onnx_io::name_data_inputs(*file, set.inputs);
      if (!data.ok()) {
        all(Verdict::refused, set.name + " gives " + std::to_string(set.inputs.size()) +
                                  " inputs, the model takes " +
                                  std::to_string(onnx_io::onnx_data_inputs(*file).size()));
        return out;
      }
      const std::map<std::string, Tensor>& named = *data;
      onnx_io::ImportOptions options = onnx_io::options_with_shapes_of(named);
      StatusOr<onnx_io::ImportedGraph> g = import_fixing_inputs(*file, named, options);
      if (!options.constant_inputs.empty()) {
        std::string fixed;
        for (const auto& [name, t] : options.constant_inputs) fixed += (fixed.empty() ? "" : ", ") + name;
        out.fixed_inputs = fixed;
      }
      if (!g.ok()) {
        all(Verdict::refused, first_line(g.error().message));
        return out;
      }
      if (Status s = verify(g->graph); !s.ok()) {
        all(Verdict::failed, "the imported graph does not verify: " + first_line(s.error().message),
            std::numeric_limits<double>::infinity());
        return out;
      }
      run_backends(*g, set, named, backends, tol, out);
    }
  } catch (const std::exception& e) {
    all(Verdict::failed, std::string("exception: ") + e.what(), std::numeric_limits<double>::infinity());
  }
  return out;
}

std::string reason_group(const std::string& reason) {
  std::string s = first_line(reason);
  // `node 'Conv_3' (Conv, opset 11): X` -> `Conv: X`
  static const std::regex node(R"(node '[^']*' \(([^,()]*), opset \d+\))");
  s = std::regex_replace(s, node, "$1");
  // Paths into the data: `/usr/.../node/test_abs/model.onnx` -> `model.onnx`.
  static const std::regex path(R"((/[^ :']*)*/test_[^ /:']*/)");
  s = std::regex_replace(s, path, "");
  // Which test tensor: `input_1.pb: tensor 'x': INT8 ...` -> `input_N.pb: tensor: INT8 ...`.
  static const std::regex file(R"(\b(input|output)_\d+\.pb)");
  s = std::regex_replace(s, file, "$1_N.pb");
  static const std::regex tensor(R"(tensor '[^']*')");
  s = std::regex_replace(s, tensor, "tensor");
  // Value names in `input 'x' is a sequence; ...`.
  static const std::regex value(R"(^(input|output) '[^']*')");
  s = std::regex_replace(s, value, "$1");
  return s;
}

}  // namespace weft::onnx_conformance
