// Export rows of the ops with a body: a fused kernel's body exported in its place, a
// scan as ONNX's Scan (a loop with no xs: Loop) whose body reads the consts from the
// outer scope: export_context.h.
#include <limits>
#include <string>
#include <vector>

#include "interop/onnx/export_context.h"
#include "interop/onnx/reader.h"

namespace weft::onnx_io {
namespace {
namespace export_ops_loop {  // this file's names, apart in the exporter's unity unit

// The body's nodes in place of the node, on its operands.
void fused(ExportContext& c) {
  const Graph& body = *c.node().body;
  GraphWriter inner(body, c.writer().out(), c.writer().names());
  for (int i = 0; i < c.num_operands(); ++i) inner.bind(body.inputs()[static_cast<size_t>(i)].value, c.in(i));
  inner.write_nodes();
  for (size_t i = 0; i < c.node().results.size(); ++i) {
    c.alias(static_cast<int>(i), inner.name_of(body.outputs()[i]));
  }
}

/// Writes loop `c`'s body into `g` (an ONNX Scan's or Loop's): the consts read from the
/// outer scope, the other body inputs after `leading` (Loop's iteration count and
/// condition), the body's outputs after `first_output` (Loop's condition).
void write_loop_body(ExportContext& c, onnx::GraphProto* g, const std::vector<std::string>& leading,
                     const std::string& first_output) {
  const Graph& body = *c.node().body;
  const int consts = static_cast<int>(c.node().int_attr("consts"));
  g->set_name(c.fresh("loop_body"));
  GraphWriter inner(body, g, c.writer().names());
  if (!leading.empty()) {
    set_value_info(g->add_input(), leading[0], Type{DType::i64, {}});
    set_value_info(g->add_input(), leading[1], Type{DType::boolean, {}});
  }
  for (int i = 0; i < c.num_operands(); ++i) {
    const ValueId v = body.inputs()[static_cast<size_t>(i)].value;
    if (i < consts) {
      inner.bind(v, c.in(i));
    } else {
      set_value_info(g->add_input(), inner.name_of(v), body.type(v));
    }
  }
  inner.write_nodes();
  if (!first_output.empty()) {
    onnx::NodeProto* pass = g->add_node();
    pass->set_op_type("Identity");
    pass->add_input(leading[1]);
    pass->add_output(first_output);
    set_value_info(g->add_output(), first_output, Type{DType::boolean, {}});
  }
  inner.write_outputs(body.outputs());
}

// A loop with no xs: ONNX's Loop with `length` as its trip count and no condition (its
// body passes the condition through). Loop stacks the ys in iteration order; a reverse
// loop's slots run the other way, so its ys are turned around.
void loop_without_xs(ExportContext& c) {
  const Node& node = c.node();
  const int consts = static_cast<int>(node.int_attr("consts"));
  const size_t carries = static_cast<size_t>(node.int_attr("carries"));
  const bool reverse = node.bool_attr("reverse");
  std::vector<std::string> inputs = {c.constant(Tensor::scalar(DType::i64, static_cast<double>(node.int_attr("length")))), ""};
  for (int i = consts; i < c.num_operands(); ++i) inputs.push_back(c.in(i));
  std::vector<std::string> outputs;
  for (size_t k = 0; k < node.results.size(); ++k) {
    outputs.push_back(k >= carries && reverse ? c.fresh("stacked") : c.out(static_cast<int>(k)));
  }
  onnx::NodeProto& l = c.add("Loop", inputs, outputs);
  write_loop_body(c, add_graph_attr(l, "body"), {c.fresh("iteration"), c.fresh("cond")}, c.fresh("cond_out"));
  for (size_t k = carries; reverse && k < node.results.size(); ++k) {
    c.add("Slice", {outputs[k], c.ints({-1}), c.ints({std::numeric_limits<int64_t>::min()}), c.ints({0}), c.ints({-1})},
          {c.out(static_cast<int>(k))});
  }
}

// weft's scan as ONNX's Scan: the carries are its state, the xs its scan inputs; the
// body reads the consts from the outer scope. Without xs: ONNX's Loop.
void scan(ExportContext& c) {
  const Node& node = c.node();
  if (node.int_attr("stop") >= 0) c.refuse("an early exit ('stop') has no exact ONNX Scan form");
  if (node.int_attr("active") >= 0) c.refuse("skipped iterations ('active') have no exact ONNX Scan form");
  const int consts = static_cast<int>(node.int_attr("consts"));
  const int carries = static_cast<int>(node.int_attr("carries"));
  const int xs = c.num_operands() - consts - carries;
  if (xs == 0) return loop_without_xs(c);
  std::vector<std::string> inputs, outputs;
  for (int i = consts; i < c.num_operands(); ++i) inputs.push_back(c.in(i));
  for (size_t i = 0; i < node.results.size(); ++i) outputs.push_back(c.out(static_cast<int>(i)));
  onnx::NodeProto& s = c.add("Scan", inputs, outputs);
  add_attr(s, "num_scan_inputs", int64_t{xs});
  if (node.bool_attr("reverse")) {
    add_attr(s, "scan_input_directions", std::vector<int64_t>(static_cast<size_t>(xs), 1));
    add_attr(s, "scan_output_directions",
             std::vector<int64_t>(node.results.size() - static_cast<size_t>(carries), 1));
  }
  write_loop_body(c, add_graph_attr(s, "body"), {}, "");
}

const OpExporter kRows[] = {
    {Op::Fused, nullptr, fused},
    {Op::Scan, nullptr, scan},
};

}  // namespace export_ops_loop
}  // namespace

std::span<const OpExporter> loop_exporters() { return export_ops_loop::kRows; }

}  // namespace weft::onnx_io
