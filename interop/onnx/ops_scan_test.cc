// The Scan converter (ops/control.cc): ONNX's Scan as weft's `scan`, against
// hand-computed numbers (values, and gradients through the imported loop), and its
// refusals. Loop and If: ops_loop_if_test.
#include <gtest/gtest.h>

#include <functional>

#include "autodiff/grad.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "interop/onnx/testing/control_case.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "runtime/reference/interpreter.h"

namespace weft::onnx_io {
namespace {
namespace ops_scan_test {  // this file's names, apart in its package's unity test

using control_case::expect_export_round_trip;
using control_case::expect_on_both;
using control_case::set_body;

/// Appends a Scan node of one scanned input (the last of `inputs`) running `body`.
onnx::NodeProto& add_scan(OnnxBuilder& b, std::vector<std::string> inputs, std::vector<std::string> outputs,
                          const OnnxBuilder& body, const std::string& name) {
  onnx::NodeProto& s = b.node("Scan", std::move(inputs), std::move(outputs), name);
  set_attr(s, "num_scan_inputs", 1);
  set_body(s, body);
  return s;
}

/// The import's error message, or "imported".
std::string import_error(const OnnxBuilder& b) {
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  return g.ok() ? std::string("imported") : g.error().message;
}

/// Scan's body of a running sum: (sum, x) -> (sum + x, (sum + x) · w), w read from the
/// outer scope.
OnnxBuilder running_sum_body(std::vector<int64_t> slice) {
  OnnxBuilder body;
  body.input("sum_in", DType::f32, slice).input("x_t", DType::f32, slice);
  body.node("Add", {"sum_in", "x_t"}, {"sum_out"});
  body.node("Mul", {"sum_out", "w"}, {"scaled"});
  body.output("sum_out", DType::f32).output("scaled", DType::f32);
  return body;
}

/// d(sum of output `output`)/dw of the imported model at `data` (its data inputs), with
/// w = `w`: the loop differentiated through the weft scan the import made.
Tensor grad_wrt_w(const OnnxFile& file, int output, std::vector<Tensor> data, const Tensor& w) {
  StatusOr<ImportedGraph> g = import_onnx(file);
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  if (!g.ok()) return Tensor();
  StatusOr<Graph> grad = gradient_graph(g->graph, output, {"w"}, "seed");
  EXPECT_TRUE(grad.ok()) << grad.error().to_string();
  if (!grad.ok()) return Tensor();
  Tensor seed(g->graph.type(g->graph.outputs()[static_cast<size_t>(output)]));
  for (int64_t i = 0; i < seed.numel(); ++i) seed.set_double(i, 1);
  data.push_back(w);
  data.push_back(seed);
  StatusOr<reference::RunResult> r = reference::run(*grad, std::move(data));
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? r->outputs[0] : Tensor();
}

TEST(Scan, RunningSumReadsOuterValues) {
  OnnxBuilder b(11);
  b.input("s0", DType::f32, {2}).input("xs", DType::f32, {3, 2});
  b.initializer("w", f32({2}, {1, -1}));
  auto& s = b.node("Scan", {"s0", "xs"}, {"s", "ys"}, "scan");
  set_attr(s, "num_scan_inputs", 1);
  set_body(s, running_sum_body({2}));
  b.output("s", DType::f32).output("ys", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  int scans = 0;
  for (const Node& n : g->graph.nodes()) scans += n.op == Op::Scan;
  EXPECT_EQ(scans, 1) << print_graph(g->graph);
  EXPECT_TRUE(verify(g->graph).ok()) << verify(g->graph).to_string();
  StatusOr<std::vector<Tensor>> y =
      import_and_run(b.file(), {f32({2}, {10, 20}), f32({3, 2}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2}, {19, 32}));
  EXPECT_EQ((*y)[1], f32({3, 2}, {11, -22, 14, -26, 19, -32}));
  // ys[t] = sums[t]·w: the gradient is the sum of the running sums.
  EXPECT_EQ(grad_wrt_w(b.file(), 1, {f32({2}, {10, 20}), f32({3, 2}, {1, 2, 3, 4, 5, 6})}, f32({2}, {1, -1})),
            f32({2}, {44, 80}));
}

TEST(Scan, InAFlowAsAModule) {
  // The running sum's final state as a stage of a flow: w (read by the body) is the
  // module's parameter `1.w` (the flow's second stage), the loop one scan node.
  OnnxBuilder b(11);
  b.input("s0", DType::f32, {2}).input("xs", DType::f32, {3, 2});
  b.initializer("w", f32({2}, {1, -1}));
  auto& s = b.node("Scan", {"s0", "xs"}, {"ys", "s"});
  set_attr(s, "num_scan_inputs", 1);
  OnnxBuilder body = running_sum_body({2});
  body.model().mutable_graph()->mutable_output()->SwapElements(0, 1);  // ys first: a state
  set_body(s, body);
  b.output("ys", DType::f32);
  const std::string path = ::testing::TempDir() + "/scan.onnx";
  std::string bytes;
  ASSERT_TRUE(b.model().SerializeToString(&bytes));
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  StatusOr<Model> m = FlowBuilder::from(Identity())
                          .input({"xs"})
                          .through(OnnxModel(path))
                          .uses({"xs"})
                          .build({{"x", Type{DType::f32, {2}}}, {"xs", Type{DType::f32, {3, 2}}}});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->parameters().size(), 1u);
  EXPECT_EQ(m->parameters()[0].name, "1.w");
  int scans = 0;
  for (const Node& n : m->graph().nodes()) scans += n.op == Op::Scan;
  EXPECT_EQ(scans, 1);
  EXPECT_EQ(m->graph().type(m->graph().outputs()[0]).to_string(), "f32[2]");
}

TEST(Scan, DirectionsAndAxes) {
  // xs [2, 3] scanned along axis 1 backward; the outputs stacked along axis 1, the
  // first prepended (direction 1), the second appended.
  OnnxBuilder b(11);
  b.input("s0", DType::f32, {2}).input("xs", DType::f32, {2, 3});
  b.initializer("w", f32({2}, {1, -1}));
  auto& s = b.node("Scan", {"s0", "xs"}, {"s", "ys", "zs"});
  set_attr(s, "num_scan_inputs", 1);
  set_attr(s, "scan_input_axes", std::vector<int64_t>{-1});
  set_attr(s, "scan_input_directions", std::vector<int64_t>{1});
  set_attr(s, "scan_output_axes", std::vector<int64_t>{1, -1});
  set_attr(s, "scan_output_directions", std::vector<int64_t>{1, 0});
  OnnxBuilder body = running_sum_body({2});
  body.output("x_t", DType::f32);
  set_body(s, body);
  b.output("s", DType::f32).output("ys", DType::f32).output("zs", DType::f32);
  // Columns read 3rd, 2nd, 1st: (3, 6), (2, 5), (1, 4); sums (3, 6), (5, 11), (6, 15).
  StatusOr<std::vector<Tensor>> y =
      import_and_run(b.file(), {f32({2}, {0, 0}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2}, {6, 15}));
  // Prepended: the last iteration's output first.
  EXPECT_EQ((*y)[1], f32({2, 3}, {6, 5, 3, -15, -11, -6}));
  // Appended: the slices in the order read.
  EXPECT_EQ((*y)[2], f32({2, 3}, {3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(grad_wrt_w(b.file(), 1, {f32({2}, {0, 0}), f32({2, 3}, {1, 2, 3, 4, 5, 6})}, f32({2}, {1, -1})),
            f32({2}, {14, 32}));
}

TEST(Scan, NoStateAndAConstantOutput) {
  OnnxBuilder b(16);
  b.input("xs", DType::f32, {2, 2});
  auto& s = b.node("Scan", {"xs"}, {"ys", "cs"});
  set_attr(s, "num_scan_inputs", 1);
  OnnxBuilder body;
  body.input("x_t", DType::f32, {2});
  body.initializer("c", f32({1}, {7}));  // a body initializer
  body.node("Neg", {"x_t"}, {"y_t"});
  body.output("y_t", DType::f32).output("c", DType::f32);
  set_body(s, body);
  b.output("ys", DType::f32).output("cs", DType::f32);
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {f32({2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2, 2}, {-1, -2, -3, -4}));
  EXPECT_EQ((*y)[1], f32({2, 1}, {7, 7}));
}

TEST(Scan, OuterConstantUsedInsideFirstThenAfter) {
  // `k` (a Constant: a `full` op once it is a graph value) is first made a value inside
  // the body; the use after the loop needs one of its own, outside.
  OnnxBuilder b(13);
  b.input("xs", DType::f32, {2, 2});
  set_attr(b.node("Constant", {}, {"k"}), "value", f32({2}, {3, 3}));
  auto& s = b.node("Scan", {"xs"}, {"ys"});
  set_attr(s, "num_scan_inputs", 1);
  OnnxBuilder body;
  body.input("x_t", DType::f32, {2});
  body.node("Mul", {"x_t", "k"}, {"y_t"});
  body.output("y_t", DType::f32);
  set_body(s, body);
  b.node("Add", {"ys", "k"}, {"z"});
  b.output("z", DType::f32);
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {f32({2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2, 2}, {6, 9, 12, 15}));
}

TEST(Scan, SiblingBodiesReuseAName) {
  // Both bodies hold an initializer `c` (and a Constant `k`), with other values: each
  // becomes a graph input of its own.
  OnnxBuilder b(13);
  b.input("xs", DType::f32, {2, 2});
  for (float v : {2.0f, 5.0f}) {
    const std::string ys = v == 2 ? "ys" : "zs";
    auto& s = b.node("Scan", {v == 2 ? "xs" : "ys"}, {ys});
    set_attr(s, "num_scan_inputs", 1);
    OnnxBuilder body;
    body.input("x_t", DType::f32, {2});
    body.initializer("c", f32({2}, {v, v}));
    set_attr(body.node("Constant", {}, {"k"}), "value", f32({2}, {0, v}));
    body.node("Mul", {"x_t", "c"}, {"m"});
    body.node("Add", {"m", "k"}, {"y_t"});
    body.output("y_t", DType::f32);
    set_body(s, body);
  }
  b.output("zs", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_EQ(g->params.size(), 4u);
  EXPECT_EQ(g->params[0].name, "c");
  EXPECT_EQ(g->params[2].name, "c_1");
  EXPECT_EQ(g->params[3].name, "k_1");
  // x·2 + (0, 2), then ·5 + (0, 5).
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {f32({2, 2}, {1, 2, 3, 4})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2, 2}, {10, 35, 30, 55}));
}

TEST(ScanErrors, RefusalsNameTheNode) {
  OnnxBuilder grows(11);  // the state changes shape
  grows.input("s0", DType::f32, {2}).input("xs", DType::f32, {3, 2});
  auto& s = grows.node("Scan", {"s0", "xs"}, {"s"}, "grow");
  set_attr(s, "num_scan_inputs", 1);
  OnnxBuilder body;
  body.input("h", DType::f32, {2}).input("x", DType::f32, {2});
  set_attr(body.node("Concat", {"h", "x"}, {"h2"}), "axis", 0);
  body.output("h2", DType::f32);
  set_body(s, body);
  grows.output("s", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(grows.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "node 'grow' (Scan, opset 11): a body that changes its loop-carried value 'h' from f32[2] to "
            "f32[4] (weft's loop carries keep their type) is not supported");

  OnnxBuilder old(8);  // Scan-8 with sequence_lens
  old.input("lens", DType::i64, {1}).input("xs", DType::f32, {1, 3, 2});
  OnnxBuilder identity;
  identity.input("x", DType::f32, {2}).output("x", DType::f32);
  add_scan(old, {"lens", "xs"}, {"ys"}, identity, "old");
  old.output("ys", DType::f32);
  EXPECT_EQ(import_error(old),
            "node 'old' (Scan, opset 8): sequence_lens (sequences of different lengths in one batch) is not "
            "supported");
}

TEST(ScanErrors, BodiesThatDoNotFit) {
  // A body output that nothing computes; Scan-8 inputs of two batch sizes.
  OnnxBuilder missing(11);
  missing.input("xs", DType::f32, {3, 2});
  OnnxBuilder body;
  body.input("x", DType::f32, {2}).output("nowhere", DType::f32);
  add_scan(missing, {"xs"}, {"ys"}, body, "scan");
  missing.output("ys", DType::f32);
  EXPECT_EQ(import_error(missing), "node 'scan' (Scan, opset 11): its body's output 'nowhere' is never computed");

  OnnxBuilder batches(8);
  batches.input("s0", DType::f32, {2, 1}).input("xs", DType::f32, {3, 3, 1});
  OnnxBuilder body8;
  body8.input("h", DType::f32, {1}).input("x", DType::f32, {1});
  body8.node("Add", {"h", "x"}, {"h2"});
  body8.output("h2", DType::f32);
  add_scan(batches, {"", "s0", "xs"}, {"s"}, body8, "scan8");
  batches.output("s", DType::f32);
  EXPECT_EQ(import_error(batches), "node 'scan8' (Scan, opset 8): inputs of batch 2 and 3");
}

// ONNX's Scan over sequences of length 0 runs no iteration: the final states are the
// initial ones, the scan outputs have length 0 (it was refused, "a scan of no iterations").
// The import has no loop left, so it exports back (a never-running `scan` with a `stop`
// did not).
TEST(Scan, SequencesOfLengthZeroRunNoIteration) {
  for (int64_t direction : {0, 1}) {
    OnnxBuilder b(11);
    b.input("s0", DType::f32, {2}).input("xs", DType::f32, {0, 2});
    onnx::NodeProto& s = add_scan(b, {"s0", "xs"}, {"s", "ys"}, running_sum_body({2}), "empty");
    set_attr(s, "scan_output_directions", std::vector<int64_t>{direction});
    b.initializer("w", f32({}, {2}));
    b.output("s", DType::f32).output("ys", DType::f32);
    const std::vector<Tensor> data = {f32({2}, {1, -2}), f32({0, 2}, {})};
    expect_on_both(b, data, {f32({2}, {1, -2}), f32({0, 2}, {})});
    expect_export_round_trip(b, data);
  }
}

TEST(Scan, Opset8BatchedForm) {
  // Per sample b: a running sum over xs[b] (read backward), from s0[b].
  OnnxBuilder b(8);
  b.input("s0", DType::f32, {2, 1}).input("xs", DType::f32, {2, 3, 1});
  b.initializer("w", f32({1}, {-1}));
  auto& s = b.node("Scan", {"", "s0", "xs"}, {"s", "ys"});
  set_attr(s, "num_scan_inputs", 1);
  set_attr(s, "directions", std::vector<int64_t>{1});
  set_body(s, running_sum_body({1}));
  b.output("s", DType::f32).output("ys", DType::f32);
  StatusOr<std::vector<Tensor>> y =
      import_and_run(b.file(), {f32({2, 1}, {0, 10}), f32({2, 3, 1}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2, 1}, {6, 25}));
  EXPECT_EQ((*y)[1], f32({2, 3, 1}, {-3, -5, -6, -16, -21, -25}));
}

TEST(ScanErrors, MalformedScansAreInvalid) {
  // Scan(s0 [2], xs [3, 2], more [M, 2]) with the running-sum body (one scanned input
  // unless `two`); `edit` changes the node.
  auto import = [](bool two, int64_t more, const std::function<void(onnx::NodeProto&)>& edit) {
    OnnxBuilder b(11);
    b.input("s0", DType::f32, {2}).input("xs", DType::f32, {3, 2}).input("more", DType::f32, {more, 2});
    b.initializer("w", f32({2}, {1, -1}));
    auto& s = b.node("Scan", two ? std::vector<std::string>{"s0", "xs", "more"} : std::vector<std::string>{"s0", "xs"},
                     {"s", "ys"}, "scan");
    set_attr(s, "num_scan_inputs", two ? 2 : 1);
    OnnxBuilder body = running_sum_body({2});
    if (two) body.input("m_t", DType::f32, {2});
    set_body(s, body);
    edit(s);
    b.output("s", DType::f32);
    StatusOr<ImportedGraph> g = import_onnx(b.file());
    return g.ok() ? std::string("imported") : g.error().message;
  };
  auto keep = [](onnx::NodeProto&) {};
  EXPECT_EQ(import(true, 3, keep), "imported");
  EXPECT_EQ(import(true, 4, keep), "node 'scan' (Scan, opset 11): scanned inputs of 3 and 4 iterations");
  EXPECT_EQ(import(false, 3, [](onnx::NodeProto& s) { set_attr(s, "scan_input_directions", std::vector<int64_t>{2}); }),
            "node 'scan' (Scan, opset 11): a scan direction is 2 (0 or 1)");
  EXPECT_EQ(import(false, 3, [](onnx::NodeProto& s) { set_attr(s, "scan_input_axes", std::vector<int64_t>{2}); }),
            "node 'scan' (Scan, opset 11): scan_input_axes[0] is 2, out of range for rank 2");
  EXPECT_EQ(import(false, 3, [](onnx::NodeProto& s) { set_attr(s, "scan_output_axes", std::vector<int64_t>{0, 1}); }),
            "node 'scan' (Scan, opset 11): attribute 'scan_output_axes' has 2 entries for 1");
  EXPECT_EQ(import(false, 3, [](onnx::NodeProto& s) { s.mutable_attribute(0)->set_i(3); }),
            "node 'scan' (Scan, opset 11): num_scan_inputs is 3 for 2 inputs");
  EXPECT_EQ(import(false, 3, [](onnx::NodeProto& s) { s.add_input("more"); }),
            "node 'scan' (Scan, opset 11): its body takes 2 inputs, the node gives 3");
  EXPECT_EQ(import(false, 3, [](onnx::NodeProto& s) { s.mutable_attribute()->RemoveLast(); }),
            "node 'scan' (Scan, opset 11): attribute 'body' is required");
}

}  // namespace ops_scan_test
}  // namespace
}  // namespace weft::onnx_io
