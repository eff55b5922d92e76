#pragma once
// Helpers shared by the control converters' tests (ops_scan_test, ops_loop_if_test): a
// body set as a node's graph attribute (and node_case.h's f32). In a namespace of its
// own, named by the test files that use it (`using control_case::set_body;`).

#include <string>

#include "interop/onnx/attributes.h"
#include "interop/onnx/testing/node_case.h"  // f32
#include "interop/onnx/testing/onnx_builder.h"

namespace weft::onnx_io::control_case {

/// Sets `body` as node `n`'s graph attribute `attr`.
inline void set_body(onnx::NodeProto& n, const OnnxBuilder& body, const std::string& attr = "body") {
  onnx::GraphProto* g = add_graph_attr(n, attr);
  *g = body.model().graph();
  g->set_name(attr);
}

}  // namespace weft::onnx_io::control_case
