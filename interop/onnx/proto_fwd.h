#pragma once
// Declarations of the ONNX protobuf classes, for headers that only pass them by pointer
// or reference. onnx-ml.pb.h (proto.h) with the protobuf headers under it is about
// 40,000 lines to parse in every translation unit that includes it; a header that names a
// proto only by reference includes this file, and the .cc that reads the proto's fields
// includes proto.h.
namespace onnx {
class AttributeProto;
class GraphProto;
class ModelProto;
class NodeProto;
class TensorProto;
class ValueInfoProto;
}  // namespace onnx
