#include "interop/onnx/testing/export_round_trip.h"

#include "interop/onnx/exporter.h"
#include "interop/onnx/reader.h"
#include "interop/onnx/testing/onnx_builder.h"
#include "runtime/reference/interpreter.h"

namespace weft::onnx_io {

bool is_importer_gap(const std::string& message) {
  return message.find("the op type is not supported") != std::string::npos;
}

OnnxFile exported_file(const onnx::ModelProto& m) {
  std::string bytes;
  WEFT_CHECK(m.SerializeToString(&bytes), "the exported model does not serialize");
  StatusOr<OnnxFile> f = parse_onnx_model(bytes, "exported.onnx", "");
  WEFT_CHECK(f.ok(), f.error().to_string());
  return std::move(*f);
}

RoundTrip export_round_trip(const Graph& g, const std::map<std::string, Tensor>& values,
                            const std::vector<Tensor>& data, double tol) {
  RoundTrip r;
  StatusOr<onnx::ModelProto> m = export_onnx(g, values);
  if (!m.ok()) {
    r.error = "export: " + m.error().to_string();
    return r;
  }
  r.model = std::move(*m);
  StatusOr<std::vector<Tensor>> back = import_and_run(exported_file(r.model), data);
  if (!back.ok()) {
    const std::string e = back.error().to_string();
    (is_importer_gap(e) ? r.importer_gap : r.error) =
        "import: " + e;
    return r;
  }
  std::vector<Tensor> inputs;
  size_t k = 0;
  for (const Input& in : g.inputs()) {
    if (in.kind == InputKind::data) {
      inputs.push_back(data.at(k++));
    } else {
      inputs.push_back(values.at(g.value(in.value).name));
    }
  }
  StatusOr<reference::RunResult> want = reference::run(g, std::move(inputs));
  if (!want.ok()) {
    r.error = "run: " + want.error().to_string();
    return r;
  }
  if (back->size() != want->outputs.size()) {
    r.why = std::to_string(back->size()) + " outputs, not " + std::to_string(want->outputs.size());
    return r;
  }
  for (size_t i = 0; i < back->size(); ++i) {
    std::string why;
    if (!all_close((*back)[i], want->outputs[i], tol, &why)) {
      r.why = "output " + std::to_string(i) + ": " + why;
      return r;
    }
  }
  r.same = true;
  return r;
}

}  // namespace weft::onnx_io
