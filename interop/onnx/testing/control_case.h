#pragma once
// Helpers shared by the control converters' tests (ops_scan_test, ops_loop_if_test): a
// body set as a node's graph attribute, a model run on the reference interpreter and the
// cpu backend, or exported and imported back (and node_case.h's f32). In a namespace of their own, named by the test
// files that use them (`using control_case::set_body;`).

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "codegen/cpu_backend.h"
#include "interop/onnx/attributes.h"
#include "interop/onnx/testing/export_round_trip.h"
#include "interop/onnx/testing/node_case.h"  // f32
#include "interop/onnx/testing/onnx_builder.h"

namespace weft::onnx_io::control_case {

/// Sets `body` as node `n`'s graph attribute `attr`.
inline void set_body(onnx::NodeProto& n, const OnnxBuilder& body, const std::string& attr = "body") {
  onnx::GraphProto* g = add_graph_attr(n, attr);
  *g = body.model().graph();
  g->set_name(attr);
}

/// Runs the model imported from `b` on `data` on the reference interpreter and on the
/// cpu backend, expecting `want` from both.
inline void expect_on_both(const OnnxBuilder& b, const std::vector<Tensor>& data, const std::vector<Tensor>& want) {
  StatusOr<std::vector<Tensor>> reference = import_and_run(b.file(), data);
  ASSERT_TRUE(reference.ok()) << reference.error().to_string();
  EXPECT_EQ(*reference, want);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  StatusOr<std::map<std::string, Tensor>> named = name_data_inputs(b.file(), data);
  ASSERT_TRUE(named.ok()) << named.error().to_string();
  StatusOr<std::vector<Tensor>> inputs = g->inputs_with(*named);
  ASSERT_TRUE(inputs.ok()) << inputs.error().to_string();
  StatusOr<reference::RunResult> cpu = codegen::run_on_cpu(g->graph, *inputs);
  ASSERT_TRUE(cpu.ok()) << cpu.error().to_string();
  EXPECT_EQ(cpu->outputs, want);
}

/// Exports the model imported from `b`, imports that back and expects it to compute
/// exactly what the first import does on `data` (the data inputs, in order).
inline void expect_export_round_trip(const OnnxBuilder& b, const std::vector<Tensor>& data) {
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  const RoundTrip r = export_round_trip(g->graph, g->values, data, /*tol=*/0);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.importer_gap, "");
  EXPECT_TRUE(r.same) << r.why;
}

}  // namespace weft::onnx_io::control_case
