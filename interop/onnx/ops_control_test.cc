// The control converters (ops/control.cc): ONNX's Scan and Loop as weft's `scan`, If,
// against hand-computed numbers (values, and gradients through the imported loop); their
// refusals; and ONNX's node tests of both.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <iostream>

#include "autodiff/grad.h"
#include "codegen/cpu_backend.h"
#include "frontend/flow.h"
#include "frontend/modules.h"
#include "interop/onnx/attributes.h"
#include "interop/onnx/testing/onnx_builder.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "runtime/reference/interpreter.h"

namespace weft::onnx_io {
namespace {
namespace ops_control_test {  // this file's names, apart in its package's unity test

namespace fs = std::filesystem;

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

/// Sets `body` as node `n`'s graph attribute `attr`.
void set_body(onnx::NodeProto& n, const OnnxBuilder& body, const std::string& attr = "body") {
  onnx::GraphProto* g = add_graph_attr(n, attr);
  *g = body.model().graph();
  g->set_name(attr);
}

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

  // Sequences of length 0: refused as such (was "reshape: cannot reshape f32[0,2] (0
  // elements) to [2] (2 elements)", the slot read before the length was checked).
  OnnxBuilder empty(11);
  empty.input("s0", DType::f32, {2}).input("xs", DType::f32, {0, 2});
  add_scan(empty, {"s0", "xs"}, {"s", "ys"}, running_sum_body({2}), "empty");
  empty.initializer("w", f32({}, {2}));
  empty.output("s", DType::f32).output("ys", DType::f32);
  EXPECT_EQ(import_error(empty),
            "node 'empty' (Scan, opset 11): a scan of no iterations (scanned inputs of length 0) is not "
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

/// Loop's body: (i, cond, y) -> (cond, y · w + i, y), w from the outer scope.
OnnxBuilder counting_body() {
  OnnxBuilder body;
  body.input("i", DType::i64, {}).input("cond_in", DType::boolean, {}).input("y_in", DType::f32, {2});
  body.node("Identity", {"cond_in"}, {"cond_out"});
  body.node("Mul", {"y_in", "w"}, {"scaled"});
  set_attr(body.node("Cast", {"i"}, {"i_f"}), "to", int64_t{onnx::TensorProto::FLOAT});
  body.node("Add", {"scaled", "i_f"}, {"y_out"});
  body.output("cond_out", DType::boolean).output("y_out", DType::f32).output("y_in", DType::f32);
  return body;
}

TEST(Loop, ConstantTripCountAndIterationNumber) {
  OnnxBuilder b(13);
  b.input("y0", DType::f32, {2}).input("w", DType::f32, {2});
  b.initializer("M", Tensor::scalar(DType::i64, 3));
  b.initializer("cond", Tensor::scalar(DType::boolean, 1));
  auto& l = b.node("Loop", {"M", "cond", "y0"}, {"y", "ys"}, "loop");
  set_body(l, counting_body());
  b.output("y", DType::f32).output("ys", DType::f32);
  // y: (1, 2) -> (2, -2) + 0 -> (4, 2) + 1 = (5, 3) -> (10, -3) + 2 = (12, -1).
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {f32({2}, {1, 2}), f32({2}, {2, -1})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2}, {12, -1}));
  EXPECT_EQ((*y)[1], f32({3, 2}, {1, 2, 2, -2, 5, 3}));
}

TEST(Loop, NoConditionAndAConstantFalseOne) {
  OnnxBuilder b(11);  // no condition input: M iterations
  b.input("y0", DType::f32, {2});
  b.initializer("M", Tensor::scalar(DType::i64, 2));
  auto& l = b.node("Loop", {"M", "", "y0"}, {"y"});
  OnnxBuilder body;
  body.input("i", DType::i64, {}).input("c", DType::boolean, {}).input("y_in", DType::f32, {2});
  body.node("Add", {"y_in", "y_in"}, {"y_out"});
  body.node("Not", {"c"}, {"stop"});  // a constant false: one iteration
  body.output("stop", DType::boolean).output("y_out", DType::f32).output("y_in", DType::f32);
  set_body(l, body);
  b.output("y", DType::f32);
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {f32({2}, {1, -3})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2}, {2, -6}));

  auto* c = b.model().mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  c->mutable_node(1)->set_op_type("Identity");  // a constant true: M iterations
  b.model().mutable_graph()->add_output()->set_name("ys");
  b.model().mutable_graph()->mutable_node(0)->add_output("ys");
  y = import_and_run(b.file(), {f32({2}, {1, -3})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2}, {4, -12}));
  EXPECT_EQ((*y)[1], f32({2, 2}, {1, -3, 2, -6}));
}

TEST(Loop, InsideAScanBody) {
  // Each scanned x is doubled twice by an inner Loop that reads the outer `two`.
  OnnxBuilder b(13);
  b.input("xs", DType::f32, {2, 1});
  b.initializer("two", f32({1}, {2}));
  auto& s = b.node("Scan", {"xs"}, {"ys"});
  set_attr(s, "num_scan_inputs", 1);
  OnnxBuilder body;
  body.input("x", DType::f32, {1});
  body.initializer("M", Tensor::scalar(DType::i64, 2));
  OnnxBuilder inner;
  inner.input("i", DType::i64, {}).input("c", DType::boolean, {}).input("v", DType::f32, {1});
  inner.node("Mul", {"v", "two"}, {"v2"});
  inner.output("c", DType::boolean).output("v2", DType::f32);
  set_body(body.node("Loop", {"M", "", "x"}, {"x4"}), inner);
  body.output("x4", DType::f32);
  set_body(s, body);
  b.output("ys", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(verify(g->graph).ok()) << verify(g->graph).to_string();
  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {f32({2, 1}, {1, -2})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({2, 1}, {4, -8}));
}

/// Loop(M, cond) {(i, c, y, n) -> (sum(2y) < 10, 2y, n + 1)}: doubles y until its sum
/// reaches 10, counting the iterations in n; `scanned`: also stacks each 2y.
OnnxBuilder doubling_loop(const std::string& cond, bool scanned, int64_t trips = 10) {
  OnnxBuilder b(13);
  b.input("y0", DType::f32, {2}).input("flag", DType::boolean, {});
  b.initializer("M", Tensor::scalar(DType::i64, static_cast<double>(trips)));
  b.initializer("n0", Tensor::scalar(DType::i64, 0));
  b.initializer("ten", f32({}, {10}));
  b.initializer("one", Tensor::scalar(DType::i64, 1));
  std::vector<std::string> outs = {"y", "n"};
  if (scanned) outs.push_back("ys");
  auto& l = b.node("Loop", {"M", cond, "y0", "n0"}, outs, "loop");
  OnnxBuilder body;
  body.input("i", DType::i64, {}).input("c", DType::boolean, {});
  body.input("y_in", DType::f32, {2}).input("n_in", DType::i64, {});
  body.node("Add", {"y_in", "y_in"}, {"y_out"});
  set_attr(body.node("ReduceSum", {"y_out"}, {"total"}), "keepdims", int64_t{0});
  body.node("Less", {"total", "ten"}, {"below"});
  body.node("Add", {"n_in", "one"}, {"n_out"});
  body.output("below", DType::boolean).output("y_out", DType::f32).output("n_out", DType::i64);
  if (scanned) body.output("y_out", DType::f32);
  set_body(l, body);
  b.output("y", DType::f32).output("n", DType::i64);
  if (scanned) b.output("ys", DType::f32);
  return b;
}

/// The doubling loop's (y, n) from `y0` with the initial condition `flag`.
void expect_doubling(const OnnxBuilder& b, const Tensor& y0, bool flag, const Tensor& y, int64_t n) {
  StatusOr<std::vector<Tensor>> got = import_and_run(b.file(), {y0, Tensor::scalar(DType::boolean, flag)});
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ((*got)[0], y);
  EXPECT_EQ((*got)[1], Tensor::scalar(DType::i64, static_cast<double>(n)));
}

// Hand-computed as ONNX's Loop runs (the condition checked before each iteration): from
// (1, 0.5), sums 3, 6, 12: the third iteration's condition is false, so y = (8, 4), n = 3.
TEST(Loop, AConditionComputedInTheBodyEndsTheLoop) {
  OnnxBuilder b = doubling_loop("", false);
  expect_doubling(b, f32({2}, {1, 0.5}), true, f32({2}, {8, 4}), 3);
  // The trip count still bounds it: from (0.01, 0) the sums stay below 10 for 10 iterations.
  expect_doubling(b, f32({2}, {0.01f, 0}), true, f32({2}, {10.24f, 0}), 10);
}

TEST(Loop, AnInitialConditionComputedAtRunTime) {
  OnnxBuilder b = doubling_loop("flag", false);
  expect_doubling(b, f32({2}, {1, 0.5}), true, f32({2}, {8, 4}), 3);
  // False: no iteration runs, and the carries are their initial values.
  expect_doubling(b, f32({2}, {1, 0.5}), false, f32({2}, {1, 0.5}), 0);
}

/// Runs the model imported from `b` on `data` on the reference interpreter and on the
/// cpu backend, expecting `want` from both.
void expect_on_both(const OnnxBuilder& b, const std::vector<Tensor>& data, const std::vector<Tensor>& want) {
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

// ONNX's Loop with M = 0 runs no iteration: its carried outputs are the initial values
// and its scan outputs have length 0 — also with a condition computed in the body, which
// with scan outputs is refused for M > 0 (LoopErrors.ADataDependentExitWithScanOutputs).
TEST(Loop, ATripCountOfZeroRunsNoIteration) {
  for (int64_t trips : {0, -2}) {  // ONNX's loop runs while i < M
    OnnxBuilder b(13);
    b.input("y0", DType::f32, {2}).input("w", DType::f32, {2});
    b.initializer("M", Tensor::scalar(DType::i64, static_cast<double>(trips)));
    b.initializer("cond", Tensor::scalar(DType::boolean, 1));
    set_body(b.node("Loop", {"M", "cond", "y0"}, {"y", "ys"}, "loop"), counting_body());
    b.output("y", DType::f32).output("ys", DType::f32);
    expect_on_both(b, {f32({2}, {1, 2}), f32({2}, {2, -1})}, {f32({2}, {1, 2}), f32({0, 2}, {})});
  }
  expect_on_both(doubling_loop("", /*scanned=*/true, /*trips=*/0),
                 {f32({2}, {1, 0.5}), Tensor::scalar(DType::boolean, 1)},
                 {f32({2}, {1, 0.5}), Tensor::scalar(DType::i64, 0), f32({0, 2}, {})});
}

TEST(LoopErrors, ADataDependentExitWithScanOutputs) {
  auto refusal = [](const std::string& cond) {
    StatusOr<ImportedGraph> g = import_onnx(doubling_loop(cond, true).file());
    return g.ok() ? std::string("imported") : g.error().message;
  };
  const std::string why =
      "with scan outputs, a data-dependent exit: weft's stacked outputs have a static length, and an early "
      "exit leaves zero-filled slots where ONNX's Loop ends them (a Loop with only loop-carried values may "
      "exit early)";
  EXPECT_EQ(refusal(""), "node 'loop' (Loop, opset 13): a condition computed in the body " + why + " is not supported");
  EXPECT_EQ(refusal("flag"),
            "node 'loop' (Loop, opset 13): an initial condition computed at run time (" + why + ") is not supported");
}

TEST(LoopErrors, RefusalsNameTheNode) {
  auto refusal = [](bool runtime_trips, bool runtime_cond) {
    OnnxBuilder b(11);
    b.input("y0", DType::f32, {2}).input("n", DType::i64, {});
    b.initializer("M", Tensor::scalar(DType::i64, 3));
    auto& l = b.node("Loop", {runtime_trips ? "n" : "M", "", "y0"}, {"y"}, "loop");
    OnnxBuilder body;
    body.input("i", DType::i64, {}).input("c", DType::boolean, {}).input("y_in", DType::f32, {2});
    body.node("ReduceSum", {"y_in"}, {"total"});
    body.node("Less", {"total", "ten"}, {"below"});
    body.output(runtime_cond ? "below" : "c", DType::boolean).output("y_in", DType::f32);
    set_body(l, body);
    b.initializer("ten", f32({}, {10}));
    b.output("y", DType::f32);
    StatusOr<ImportedGraph> g = import_onnx(b.file());
    return g.ok() ? std::string("imported") : g.error().message;
  };
  EXPECT_EQ(refusal(true, false),
            "node 'loop' (Loop, opset 11): a trip count M computed at run time (weft's loops have a static "
            "length: M must be a constant or an initializer) is not supported");
  EXPECT_EQ(refusal(false, true), "imported");  // the scan's stop (ADataDependentExitWithScanOutputs)
  EXPECT_EQ(refusal(false, false), "imported");
}

/// If(cond) {then: x + 1, c [2]} else {x - 1, c [3] or [2]}.
OnnxBuilder if_model(bool constant_cond, bool cond, bool same_types) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2});
  if (constant_cond) {
    b.initializer("cond", Tensor::scalar(DType::boolean, cond ? 1 : 0));
  } else {
    b.input("cond", DType::boolean, {1});
  }
  b.initializer("one", f32({}, {1}));
  auto& n = b.node("If", {"cond"}, {"y", "c"}, "if");
  for (bool branch : {true, false}) {
    OnnxBuilder g;
    g.node(branch ? "Add" : "Sub", {"x", "one"}, {"y_b"});
    const std::vector<float> c = branch || same_types ? std::vector<float>{5, 6} : std::vector<float>{7, 8, 9};
    set_attr(g.node("Constant", {}, {"c_b"}), "value", f32({static_cast<int64_t>(c.size())}, c));
    g.output("y_b", DType::f32).output("c_b", DType::f32);
    set_body(n, g, branch ? "then_branch" : "else_branch");
  }
  b.output("y", DType::f32).output("c", DType::f32);
  return b;
}

TEST(If, ConstantConditionPicksABranch) {
  for (bool cond : {true, false}) {
    StatusOr<std::vector<Tensor>> y = import_and_run(if_model(true, cond, false).file(), {f32({2}, {1, 2})});
    ASSERT_TRUE(y.ok()) << y.error().to_string();
    EXPECT_EQ((*y)[0], cond ? f32({2}, {2, 3}) : f32({2}, {0, 1}));
    EXPECT_EQ((*y)[1], cond ? f32({2}, {5, 6}) : f32({3}, {7, 8, 9}));
  }
}

TEST(If, ComputedConditionSelects) {
  const OnnxFile file = if_model(false, false, true).file();
  for (bool cond : {true, false}) {
    Tensor c = Tensor::from_doubles(DType::boolean, Shape({1}), {cond ? 1.0 : 0.0});
    StatusOr<std::vector<Tensor>> y = import_and_run(file, {f32({2}, {1, 2}), c});
    ASSERT_TRUE(y.ok()) << y.error().to_string();
    EXPECT_EQ((*y)[0], cond ? f32({2}, {2, 3}) : f32({2}, {0, 1}));
  }
  StatusOr<ImportedGraph> g = import_onnx(if_model(false, false, false).file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "node 'if' (If, opset 13): a condition computed at run time (choosing between outputs of types "
            "f32[2] and f32[3]: weft's shapes are static) is not supported");
  OnnxBuilder lopsided = if_model(false, false, true);
  lopsided.model().mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g()->mutable_output()->RemoveLast();
  g = import_onnx(lopsided.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "node 'if' (If, opset 13): its branches have 2 and 1 outputs");
  OnnxBuilder with_input = if_model(true, true, true);  // a branch takes no inputs
  auto* then_branch = with_input.model().mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  then_branch->add_input()->set_name("stray");
  then_branch->set_name("then");
  g = import_onnx(with_input.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "node 'if' (If, opset 13): its body 'then' takes 1 inputs, not 0");
}

// ---- ONNX's node tests ---------------------------------------------------------------

/// Runs one test folder of ONNX's backend data (exact comparison: these sum small
/// floats); "" when every data set matches, else why not. With `constants`, the first
/// that many inputs are given as initializers (a Loop's trip count and condition, which
/// weft needs at import time).
std::string run_node_test(const fs::path& dir, int constants = 0) {
  StatusOr<OnnxFile> file = read_onnx_model((dir / "model.onnx").string());
  if (!file.ok()) return file.error().message;
  const fs::path data = dir / "test_data_set_0";
  std::vector<Tensor> inputs, outputs;
  for (auto* list : {&inputs, &outputs}) {
    const std::string kind = list == &inputs ? "input_" : "output_";
    for (int k = 0; fs::exists(data / (kind + std::to_string(k) + ".pb")); ++k) {
      StatusOr<Tensor> t = read_onnx_tensor((data / (kind + std::to_string(k) + ".pb")).string());
      if (!t.ok()) return t.error().message;
      list->push_back(std::move(*t));
    }
  }
  onnx::GraphProto& g = *file->model.mutable_graph();
  for (int k = 0; k < constants; ++k) {
    onnx::TensorProto* t = g.add_initializer();
    tensor_to_proto(inputs[static_cast<size_t>(k)], t);
    t->set_name(g.input(k).name());
  }
  inputs.erase(inputs.begin(), inputs.begin() + constants);
  StatusOr<std::vector<Tensor>> got = import_and_run(*file, inputs);
  if (!got.ok()) return got.error().message;
  if (*got != outputs) return "different outputs";
  return "";
}

TEST(LoopErrors, MalformedAndNeverRunningLoops) {
  // A loop of y0 -> y0 + y0 with trip count `trips`, initial condition `cond` ("" for
  // none), and a body that declares input `dup` twice when `twice`.
  auto import = [](int64_t trips, const std::string& cond, bool twice) {
    OnnxBuilder b(13);
    b.input("y0", DType::f32, {2}).input("flag", DType::boolean, {});
    b.initializer("M", Tensor::scalar(DType::i64, static_cast<double>(trips)));
    b.initializer("no", Tensor::scalar(DType::boolean, 0));
    b.initializer("yes", Tensor::scalar(DType::boolean, 1));
    auto& l = b.node("Loop", {trips < 0 ? "" : "M", cond, "y0"}, {"y"}, "loop");
    OnnxBuilder body;
    body.input("i", DType::i64, {}).input(twice ? "i" : "c", DType::boolean, {}).input("y_in", DType::f32, {2});
    body.node("Add", {"y_in", "y_in"}, {"y_out"});
    body.output(twice ? "i" : "c", DType::boolean).output("y_out", DType::f32);
    set_body(l, body);
    b.output("y", DType::f32);
    StatusOr<ImportedGraph> g = import_onnx(b.file());
    return g.ok() ? std::string("imported") : g.error().message;
  };
  EXPECT_EQ(import(2, "yes", false), "imported");
  EXPECT_EQ(import(0, "", false), "imported");  // Loop.ATripCountOfZeroRunsNoIteration
  EXPECT_EQ(import(2, "no", false), "imported");  // no iteration runs: y = y0
  EXPECT_EQ(import(2, "", true), "node 'loop' (Loop, opset 13): its body declares input 'i' twice");
  EXPECT_EQ(import(-1, "yes", false),
            "node 'loop' (Loop, opset 13): a Loop without a trip count M (weft's loops have a static length) "
            "is not supported");
  EXPECT_EQ(import(2, "flag", false), "imported");  // AnInitialConditionComputedAtRunTime
}

TEST(OnnxNodeTests, ScanLoopAndIf) {
  const fs::path root = "/usr/include/onnx/backend/test/data/node";
  if (!fs::exists(root)) GTEST_SKIP() << "ONNX's test data is not installed";
  EXPECT_EQ(run_node_test(root / "test_scan9_sum"), "");
  EXPECT_EQ(run_node_test(root / "test_if"), "");
  // test_if_seq and test_if_opt return a sequence and an optional, which weft has not.
  EXPECT_EQ(run_node_test(root / "test_scan_sum"), "");
  EXPECT_EQ(run_node_test(root / "test_loop11"),
            "node '#0' (Loop, opset 11): a trip count M computed at run time (weft's loops have a static "
            "length: M must be a constant or an initializer) is not supported");
  // With M and the condition constant, the body's Slice starts at the iteration number,
  // a carry of the weft loop: a slice at a computed offset, which weft's Slice is not.
  EXPECT_EQ(run_node_test(root / "test_loop11", /*constants=*/2),
            "node '#6' (Slice, opset 11): starts computed at run time (weft's shapes are static: it "
            "must be a constant or an initializer) is not supported");
}

}  // namespace ops_control_test
}  // namespace
}  // namespace weft::onnx_io
