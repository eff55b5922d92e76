#pragma once
// GELU as ONNX spells it before opset 20 (which has no Gelu op), found so that the
// importer emits weft's one `gelu` op instead of five elementwise ones: the builder's
// GELU fuses into its matmul's epilogue on the CPU, the spelled-out one does not, so
// without this an imported transformer's step lost eight epilogue fusions.
//
//   y = 0.5 · x · (1 + erf(x / √2))
//
// in the two orders exporters write it (operands of Mul and Add in either order):
//   weft's exporter:         Mul(x, 1/√2) → Erf → Add(1, ·);  Mul(0.5, x);  Mul(both)
//   torch.onnx.export:       Div(x, √2) → Erf → Add(·, 1) → Mul(x, ·) → Mul(·, 0.5)
// The constants are scalars (initializers or Constant nodes) equal to 0.5, 1 and √2 or
// 1/√2 to within float rounding. A span is fused only when every value inside it is used
// once, inside it, and is not an output of the graph: nothing else sees the difference.

#include <map>
#include <string>
#include <vector>

#include "interop/onnx/proto.h"

namespace weft::onnx_io {

/// The opset whose Gelu op a span is converted as.
inline constexpr int kGeluOpset = 20;

/// One GELU found in a graph.
struct GeluSpan {
  std::string x;          ///< The input.
  std::vector<int> nodes; ///< The span's nodes, by index; the last computes the output.
};

/// The GELU spans of `g`, by the index of each span's last node.
std::map<int, GeluSpan> find_gelu_spans(const onnx::GraphProto& g);

/// The node that computes span `s` of `g` as one `Gelu` (opset 20's, approximate "none"),
/// named and placed as the span's last node.
onnx::NodeProto gelu_node(const onnx::GraphProto& g, const GeluSpan& s);

}  // namespace weft::onnx_io
