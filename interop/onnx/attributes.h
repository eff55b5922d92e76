#pragma once
// Writing an ONNX node's attributes: one AttributeProto of each type, appended to the
// node. The exporter (export_context.h) writes its nodes' attributes with these, and the
// tests' OnnxBuilder (testing/onnx_builder.h, set_attr) its models'.
//
//   onnx::NodeProto& conv = ...;
//   add_attr(conv, "strides", std::vector<int64_t>{2, 2});
//   add_attr(conv, "group", int64_t{1});
//   add_attr(conv, "auto_pad", std::string("NOTSET"));

#include <cstdint>
#include <string>
#include <vector>

#include "interop/onnx/proto.h"
#include "runtime/tensor.h"

namespace weft::onnx_io {

/// Appends attribute `name` holding `v`: an INT, FLOAT, STRING, INTS, FLOATS or TENSOR
/// by the type of `v`.
void add_attr(onnx::NodeProto& n, const std::string& name, int64_t v);
void add_attr(onnx::NodeProto& n, const std::string& name, float v);
void add_attr(onnx::NodeProto& n, const std::string& name, const std::string& v);
void add_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
void add_attr(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v);
void add_attr(onnx::NodeProto& n, const std::string& name, const Tensor& v);
/// Appends a GRAPH attribute `name` (Scan's and Loop's body); returns the graph to fill.
onnx::GraphProto* add_graph_attr(onnx::NodeProto& n, const std::string& name);

}  // namespace weft::onnx_io
