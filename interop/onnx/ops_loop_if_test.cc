// The Loop and If converters (ops/control.cc): ONNX's Loop as weft's `scan`, If as the
// branch it picks or a `select`, against hand-computed numbers; their refusals; and
// ONNX's node tests of Scan, Loop and If.
#include <gtest/gtest.h>

#include <filesystem>

#include "interop/onnx/testing/control_case.h"
#include "ir/verifier.h"
#include "runtime/reference/interpreter.h"

namespace weft::onnx_io {
namespace {
namespace ops_loop_if_test {  // this file's names, apart in its package's unity test

namespace fs = std::filesystem;

using control_case::expect_export_round_trip;
using control_case::expect_on_both;
using control_case::set_body;

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

/// Whether the graph has a `scan` node.
bool has_scan(const Graph& g) {
  for (const Node& node : g.nodes()) {
    if (node.op == Op::Scan) return true;
  }
  return false;
}

// ONNX's Loop with M = 0 runs no iteration: its carried outputs are the initial values
// and its scan outputs have length 0 — also with a condition computed in the body, which
// with scan outputs is refused for M > 0 (LoopErrors.ADataDependentExitWithScanOutputs).
// The import has no loop left, so it exports back (a never-running `scan` with a `stop`
// did not: "an early exit ('stop') has no exact ONNX Scan form").
TEST(Loop, ATripCountOfZeroRunsNoIteration) {
  for (int64_t trips : {0, -2}) {  // ONNX's loop runs while i < M
    OnnxBuilder b(13);
    b.input("y0", DType::f32, {2}).input("w", DType::f32, {2});
    b.initializer("M", Tensor::scalar(DType::i64, static_cast<double>(trips)));
    b.initializer("cond", Tensor::scalar(DType::boolean, 1));
    set_body(b.node("Loop", {"M", "cond", "y0"}, {"y", "ys"}, "loop"), counting_body());
    b.output("y", DType::f32).output("ys", DType::f32);
    const std::vector<Tensor> data = {f32({2}, {1, 2}), f32({2}, {2, -1})};
    expect_on_both(b, data, {f32({2}, {1, 2}), f32({0, 2}, {})});
    expect_export_round_trip(b, data);
    StatusOr<ImportedGraph> g = import_onnx(b.file());
    ASSERT_TRUE(g.ok()) << g.error().to_string();
    EXPECT_FALSE(has_scan(g->graph));
  }
  const OnnxBuilder doubling = doubling_loop("", /*scanned=*/true, /*trips=*/0);
  const std::vector<Tensor> data = {f32({2}, {1, 0.5}), Tensor::scalar(DType::boolean, 1)};
  expect_on_both(doubling, data, {f32({2}, {1, 0.5}), Tensor::scalar(DType::i64, 0), f32({0, 2}, {})});
  expect_export_round_trip(doubling, data);
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

}  // namespace ops_loop_if_test
}  // namespace
}  // namespace weft::onnx_io
