// with_weights: a weightless ONNX model and its initializers, as protobuf's wire format
// (a varint tag and length before each message; weightless.h says why appending works).
#include "interop/onnx/weightless.h"

#include <cstdint>

#include "formats/file_io.h"

namespace weft::onnx_io {
namespace {

// Field tags of ONNX's protobuf messages, with wire type 2 (length-delimited).
constexpr char kModelGraph = (7 << 3) | 2;        // ModelProto.graph
constexpr char kGraphInitializer = (5 << 3) | 2;  // GraphProto.initializer
constexpr char kTensorRawData = (9 << 3) | 2;     // TensorProto.raw_data
constexpr uint64_t kMaxProtobufBytes = uint64_t{2} << 30;

void append_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// A length-delimited field: its tag, the length of `body`, `body`.
void append_field(std::string& out, char tag, std::string_view body) {
  out.push_back(tag);
  append_varint(out, body.size());
  out.append(body);
}

}  // namespace

StatusOr<std::string> with_weights(const WeightlessModel& w,
                                   const std::function<StatusOr<Tensor>(const std::string&)>& value_of) {
  std::string graph;
  for (const WeightlessInitializer& init : w.initializers) {
    WEFT_ASSIGN_OR_RETURN(Tensor t, value_of(init.value));
    std::string tensor = init.header;
    append_field(tensor, kTensorRawData,
                 std::string_view(static_cast<const char*>(t.raw_data()), t.bytes()));
    append_field(graph, kGraphInitializer, tensor);
    if (graph.size() + w.model.size() >= kMaxProtobufBytes) {
      return Error{"the ONNX model would exceed protobuf's 2 GiB limit (write the weights as a checkpoint)"};
    }
  }
  std::string out = w.model;
  append_field(out, kModelGraph, graph);
  return out;
}

Status write_with_weights(const std::string& path, const WeightlessModel& w,
                          const std::function<StatusOr<Tensor>(const std::string&)>& value_of) {
  StatusOr<std::string> bytes = with_weights(w, value_of);
  if (!bytes.ok()) return Error{path + ": " + bytes.error().message};
  return write_file_atomically(path, *bytes);
}

}  // namespace weft::onnx_io
