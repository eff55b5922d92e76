// The importer's entry points (importer.h): OnnxModel (a module of a flow) and
// import_onnx (a graph of its own), over the machinery of import_scope.h.
#include "interop/onnx/importer.h"

#include <filesystem>
#include <set>
#include <memory>

#include "interop/onnx/import_scope.h"
#include "ir/checked_math.h"
#include "ir/text_util.h"
#include "training/init.h"

namespace weft::onnx_io {

// ---------------------------------------------------------------------------
// Entry points

namespace {

// The declared type of graph input `in`, with symbolic dims bound from `dims`.
StatusOr<Type> declared_type(const onnx::ValueInfoProto& in, const std::map<std::string, int64_t>& dims,
                             const Shape* given) {
  const std::string what = "input '" + in.name() + "'";
  // Each dim may be valid and their product still overflow int64: refused here, as `weftc
  // check` refuses such an input (infer-types), rather than written into the graph.
  auto sized = [&](Type t) -> StatusOr<Type> {
    if (size_fits(t.dtype, t.shape.dims)) return t;
    return Error{what + " is " + t.to_string() + ", whose size in bytes does not fit in 64 bits; check its "
                 "dims (weftc import --input-shape " + in.name() + "=...)"};
  };
  if (!in.type().has_tensor_type()) return Error{what + ": only tensor inputs are supported"};
  const onnx::TypeProto::Tensor& tt = in.type().tensor_type();
  StatusOr<DType> dtype = dtype_from_onnx(tt.elem_type());
  if (!dtype.ok()) return Error{what + ": " + dtype.error().message};
  if (given != nullptr) return sized(Type{*dtype, *given});
  if (!tt.has_shape()) {
    return Error{what + " has no declared shape; give it (weftc import --input-shape " + in.name() +
                 "=2x3)"};
  }
  std::vector<int64_t> shape;
  for (int k = 0; k < tt.shape().dim_size(); ++k) {
    const onnx::TensorShapeProto::Dimension& d = tt.shape().dim(k);
    if (d.has_dim_value() && d.dim_value() >= 0) {
      shape.push_back(d.dim_value());
      continue;
    }
    const std::string sym = d.has_dim_param() ? d.dim_param() : "";
    auto it = sym.empty() ? dims.end() : dims.find(sym);
    if (it == dims.end()) {
      return Error{what + ": dimension " + std::to_string(k) +
                   (sym.empty() ? " is unknown" : " ('" + sym + "') is symbolic") +
                   "; weft's shapes are static: give its size (weftc import " +
                   (sym.empty() ? "--input-shape " + in.name() + "=..." : "--dim " + sym + "=N") + ")"};
    }
    shape.push_back(it->second);
  }
  return sized(Type{*dtype, Shape(shape)});
}

bool is_initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const onnx::TensorProto& t : g.initializer()) {
    if (t.name() == name) return true;
  }
  return false;
}

class OnnxModule : public Module {
 public:
  OnnxModule(std::string path, ImportOptions options)
      : path_(std::move(path)), options_(std::move(options)) {}

  std::string describe() const override {
    return "OnnxModel(" + std::filesystem::path(path_).filename().string() + ")";
  }

  ValueId forward(Emitter& e, const std::vector<ValueId>& inputs) override {
    if (file_ == nullptr) {
      StatusOr<OnnxFile> f = read_onnx_model(path_);
      if (!f.ok()) e.fail(f.error().message);
      file_ = std::make_shared<OnnxFile>(std::move(*f));
    }
    check_inputs(e, inputs);
    Importer importer(e, *file_, this);
    std::vector<ValueId> outputs = importer.run(inputs);
    if (outputs.empty()) e.fail(path_ + ": the model has no outputs");
    return outputs[0];
  }

 private:
  // The flow's values must have the model's dtypes and its static dims; a symbolic dim
  // takes the size it has in the first input that names it.
  void check_inputs(Emitter& e, const std::vector<ValueId>& inputs) {
    const onnx::GraphProto& g = file_->model.graph();
    std::map<std::string, int64_t> bound = options_.dims;
    size_t k = 0;
    for (const onnx::ValueInfoProto& in : g.input()) {
      if (is_initializer(g, in.name()) || k >= inputs.size()) continue;
      const Type got = e.type(inputs[k++]);
      const std::string what = path_ + ": input '" + in.name() + "'";
      StatusOr<DType> dtype = dtype_from_onnx(in.type().tensor_type().elem_type());
      if (!dtype.ok()) e.fail(what + ": " + dtype.error().message);
      if (*dtype != got.dtype) {
        e.fail(what + " is " + std::string(dtype_name(*dtype)) + ", given " + got.to_string());
      }
      if (!in.type().tensor_type().has_shape()) continue;
      const onnx::TensorShapeProto& s = in.type().tensor_type().shape();
      if (s.dim_size() != got.shape.rank()) {
        e.fail(what + " has rank " + std::to_string(s.dim_size()) + ", given " + got.to_string());
      }
      for (int d = 0; d < s.dim_size(); ++d) {
        const auto& dim = s.dim(d);
        int64_t want = dim.has_dim_value() ? dim.dim_value() : -1;
        if (want < 0 && dim.has_dim_param()) {
          auto [it, fresh] = bound.emplace(dim.dim_param(), got.shape[d]);
          want = it->second;
        }
        if (d == 0 && options_.free_batch_dimension) continue;
        if (want >= 0 && want != got.shape[d]) {
          e.fail(what + " has dimension " + std::to_string(d) + " of size " + std::to_string(want) +
                 (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : "") + ", given " +
                 got.to_string());
        }
      }
    }
  }

  std::string path_;
  ImportOptions options_;
  std::shared_ptr<const OnnxFile> file_;
};

}  // namespace

std::vector<const onnx::ValueInfoProto*> onnx_data_inputs(const OnnxFile& file) {
  std::vector<const onnx::ValueInfoProto*> out;
  for (const onnx::ValueInfoProto& in : file.model.graph().input()) {
    if (!is_initializer(file.model.graph(), in.name())) out.push_back(&in);
  }
  return out;
}

StatusOr<std::vector<std::pair<std::string, Type>>> onnx_input_types(const OnnxFile& file,
                                                                     const ImportOptions& options) {
  const onnx::GraphProto& g = file.model.graph();
  std::vector<std::pair<std::string, Type>> out;
  std::map<std::string, Shape> unused = options.input_shapes;
  std::set<std::string> seen;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (is_initializer(g, in.name())) continue;
    if (in.name().empty()) return Error{file.path + ": the model has an input with no name"};
    if (options.constant_inputs.count(in.name())) {
      StatusOr<DType> declared = dtype_from_onnx(in.type().tensor_type().elem_type());
      if (declared.ok() && *declared != options.constant_inputs.at(in.name()).dtype()) {
        return Error{file.path + ": input '" + in.name() + "' is " + std::string(dtype_name(*declared)) +
                     ", its constant value " + options.constant_inputs.at(in.name()).type().to_string()};
      }
      seen.insert(in.name());
      continue;
    }
    if (!seen.insert(in.name()).second) {
      return Error{file.path + ": the model declares input '" + in.name() + "' twice"};
    }
    auto given = options.input_shapes.find(in.name());
    unused.erase(in.name());
    StatusOr<Type> t = declared_type(in, options.dims,
                                     given == options.input_shapes.end() ? nullptr : &given->second);
    if (!t.ok()) return Error{file.path + ": " + t.error().message};
    out.emplace_back(in.name(), *t);
  }
  if (!unused.empty()) {
    return Error{file.path + ": the model has no input named '" + unused.begin()->first + "'"};
  }
  for (const auto& [name, value] : options.constant_inputs) {
    if (!seen.count(name)) return Error{file.path + ": the model has no input named '" + name + "'"};
  }
  // A dimension named in `dims` that no input declares (a typo: `--dim Batch=32`).
  std::set<std::string> symbols;
  for (const onnx::ValueInfoProto& in : g.input()) {
    for (const onnx::TensorShapeProto::Dimension& d : in.type().tensor_type().shape().dim()) {
      if (d.has_dim_param() && !d.dim_param().empty()) symbols.insert(d.dim_param());
    }
  }
  for (const auto& [name, size] : options.dims) {
    if (symbols.count(name)) continue;
    std::string theirs;
    for (const std::string& s : symbols) theirs += (theirs.empty() ? "'" : ", '") + s + "'";
    return Error{file.path + ": no input has a symbolic dimension '" + name + "' (--dim " + name + "=" +
                 std::to_string(size) + "); " +
                 (theirs.empty() ? "the model's inputs have none" : "the model's inputs have " + theirs)};
  }
  return out;
}

ModulePtr OnnxModel(const std::string& path, ImportOptions options) {
  return std::make_shared<OnnxModule>(path, std::move(options));
}

StatusOr<std::vector<Tensor>> ImportedGraph::inputs_with(
    const std::map<std::string, Tensor>& data) const {
  std::vector<Tensor> all;
  for (const Input& in : graph.inputs()) {
    const std::string& name = graph.value(in.value).name;
    auto it = values.find(name);
    if (it == values.end()) it = data.find(name);
    if (it == data.end()) return Error{"no tensor given for input '" + name + "'"};
    all.push_back(it->second);
  }
  return all;
}

StatusOr<std::map<std::string, Tensor>> name_data_inputs(const OnnxFile& file,
                                                         std::vector<Tensor> tensors) {
  const std::vector<const onnx::ValueInfoProto*> inputs = onnx_data_inputs(file);
  if (inputs.size() != tensors.size()) {
    return Error{counted(static_cast<int64_t>(tensors.size()), "input") + " given, the model takes " +
                 std::to_string(inputs.size())};
  }
  std::map<std::string, Tensor> out;
  for (size_t k = 0; k < inputs.size(); ++k) out.emplace(inputs[k]->name(), std::move(tensors[k]));
  return out;
}

ImportOptions options_with_shapes_of(const std::map<std::string, Tensor>& data,
                                     ImportOptions options) {
  for (const auto& [name, t] : data) options.input_shapes.emplace(name, t.shape());
  return options;
}

StatusOr<ImportedGraph> import_onnx(const OnnxFile& file, const ImportOptions& options,
                                    bool training) {
  WEFT_ASSIGN_OR_RETURN(auto types, onnx_input_types(file, options));
  ImportedGraph out;
  Emitter e(out.graph, BuildOptions{.training = training, .seed = 0});
  try {
    std::vector<ValueId> inputs;
    for (const auto& [name, type] : types) inputs.push_back(out.graph.add_input(name, type));
    Importer importer(e, file, nullptr, &options.constant_inputs, options.needs_constant);
    std::vector<ValueId> outputs = importer.run(inputs);
    e.finish();
    out.graph.set_outputs(std::move(outputs));
  } catch (const BuildFailure& f) {
    return f.error;
  }
  out.params = e.params();
  for (const ParamInfo& p : out.params) {
    WEFT_ASSIGN_OR_RETURN(Tensor t, materialize(p.init, out.graph.type(p.value), /*seed=*/0,
                                                parameter_stream(p.name)));
    out.values.emplace(p.name, std::move(t));
  }
  return out;
}

StatusOr<ImportedGraph> import_onnx(const std::string& path, const ImportOptions& options,
                                    bool training) {
  WEFT_ASSIGN_OR_RETURN(OnnxFile file, read_onnx_model(path));
  return import_onnx(file, options, training);
}

}  // namespace weft::onnx_io
