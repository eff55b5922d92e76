// libFuzzer target: the ONNX reader and importer (interop/onnx). Beyond not crashing: an
// error has a message; external data is never read (the model folder is empty, so an
// external-data tensor is always refused); a tensor that the reader accepts writes back
// to a TensorProto that reads back to the same type and bytes; a model that imports gives
// a graph with as many outputs as the model declares.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "interop/onnx/importer.h"
#include "interop/onnx/reader.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// An empty folder the model "lives" in: external data must stay inside it (so every
// external-data tensor is refused, by escaping or by naming a file that is absent).
const std::string& model_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/weft-onnx-fuzz-XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d == nullptr ? "/nonexistent-weft-fuzz" : d);
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  StatusOr<onnx_io::OnnxFile> file = onnx_io::parse_onnx_model(bytes, "fuzz.onnx", model_dir());
  if (!file.ok()) {
    FUZZ_CHECK_ERROR(file);
    return 0;
  }
  for (const onnx::TensorProto& init : file->model.graph().initializer()) {
    StatusOr<Tensor> t = onnx_io::tensor_from_proto(init, model_dir());
    // The folder is empty: an external-data tensor can only be refused (it escapes the
    // folder, names an absent file, or is malformed otherwise).
    FUZZ_CHECK(init.data_location() != onnx::TensorProto::EXTERNAL || !t.ok(),
               "an external-data tensor was read from an empty model folder");
    if (!t.ok()) {
      FUZZ_CHECK_ERROR(t);
      continue;
    }
    onnx::TensorProto written;
    onnx_io::tensor_to_proto(*t, &written);
    StatusOr<Tensor> back = onnx_io::tensor_from_proto(written, "");
    FUZZ_CHECK(back.ok(), "a written tensor does not read back: " + back.status().to_string());
    FUZZ_CHECK(back->type() == t->type(), "round trip changed the type");
    FUZZ_CHECK(std::memcmp(back->raw_data(), t->raw_data(), t->bytes()) == 0,
               "round trip changed the data");
  }
  // Symbolic dims get a small size so that the importer runs on every model.
  onnx_io::ImportOptions options;
  for (const onnx::ValueInfoProto& in : file->model.graph().input()) {
    for (const auto& d : in.type().tensor_type().shape().dim()) {
      if (d.has_dim_param()) options.dims[d.dim_param()] = 2;
    }
  }
  StatusOr<onnx_io::ImportedGraph> g = onnx_io::import_onnx(*file, options);
  if (!g.ok()) {
    FUZZ_CHECK_ERROR(g);
    return 0;
  }
  FUZZ_CHECK(static_cast<int>(g->graph.outputs().size()) == file->model.graph().output_size(),
             "the imported graph has another number of outputs than the model");
  return 0;
}
