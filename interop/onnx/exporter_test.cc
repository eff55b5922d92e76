// The ONNX exporter: every fixture case (tests/fixtures, one node per case) exported,
// passed through ONNX's checker and shape inference, imported back and run on the
// reference interpreter against the fixture's expected result; the refusals and their
// messages; parameters as initializers; fused bodies and loops; writing a file.
#include "interop/onnx/exporter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <set>

#include "frontend/flow.h"
#include "frontend/init_params.h"
#include "frontend/modules.h"
#include "interop/onnx/export_context.h"
#include "interop/onnx/testing/export_round_trip.h"
#include "interop/onnx/testing/onnx_builder.h"
#include "ir/shape_rules.h"
#include "ir/text.h"
#include "runtime/reference/testing/fixture_cases.h"

namespace weft::onnx_io {
namespace {
namespace exporter_test {  // this file's names, apart in its package's unity test

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

/// The op types of the model's top-level nodes, in order.
std::vector<std::string> op_types(const onnx::ModelProto& m) {
  std::vector<std::string> types;
  for (const onnx::NodeProto& n : m.graph().node()) types.push_back(n.op_type());
  return types;
}

/// Expects `g`'s export, imported back, to compute what `g` does; returns whether it was
/// compared (false: the importer lacks a converter it needs, and the export alone is checked).
bool expect_round_trip(const Graph& g, const std::map<std::string, Tensor>& values,
                       const std::vector<Tensor>& data, double tol) {
  RoundTrip r = export_round_trip(g, values, data, tol);
  EXPECT_EQ(r.error, "");
  if (!r.error.empty() || !r.importer_gap.empty()) return false;
  EXPECT_TRUE(r.same) << r.why;
  return true;
}

Graph parse(std::string_view text) {
  StatusOr<Graph> g = parse_graph(text, "t.wir");
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return g.ok() ? std::move(*g) : Graph();
}

TEST(ExportTable, EveryOpIsExportedOrRefusedWithAReason) {
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const bool exported = find_exporter(op) != nullptr, refused = find_refusal(op) != nullptr;
    EXPECT_TRUE(exported != refused) << op_name(op) << ": exported " << exported << ", refused " << refused;
  }
  EXPECT_EQ(exported_ops().size() + refused_ops().size(), static_cast<size_t>(kNumOps));
}

// Every fixture case: refused ops name themselves and the case's location; the others
// pass ONNX's checks and, imported back, compute what NumPy/PyTorch did.
TEST(ExportFixtures, EachCaseExportsAndRoundTrips) {
  StatusOr<std::vector<testing::FixtureEntry>> entries = testing::load_fixture_cases();
  ASSERT_TRUE(entries.ok()) << entries.error().to_string();
  int compared = 0, exported = 0;
  std::set<std::string> not_imported;
  for (const testing::FixtureEntry& e : *entries) {
    if (!e.built.ok()) continue;
    const testing::FixtureCase& c = *e.built;
    SCOPED_TRACE(c.name);
    StatusOr<onnx::ModelProto> m = export_onnx(c.graph, {});
    if (find_refusal(c.op)) {
      ASSERT_FALSE(m.ok());
      EXPECT_EQ(m.error().to_string().rfind(c.name + ".wir:1:1: error: cannot export '" +
                                                std::string(op_name(c.op)) + "' to ONNX: ",
                                            0),
                0u)
          << m.error().to_string();
      continue;
    }
    EXPECT_TRUE(m.ok()) << m.error().to_string();
    if (!m.ok()) continue;
    ++exported;
    StatusOr<std::vector<Tensor>> back = import_and_run(exported_file(*m), c.inputs);
    if (!back.ok() && is_importer_gap(back.error().message)) {
      not_imported.insert(std::string(op_name(c.op)));
      continue;
    }
    EXPECT_TRUE(back.ok()) << back.error().to_string();
    if (!back.ok()) continue;
    ASSERT_EQ(back->size(), 1u);
    std::string why;
    EXPECT_TRUE(all_close((*back)[0], c.want, c.tol, &why)) << why;
    ++compared;
  }
  std::string missing;
  for (const std::string& op : not_imported) missing += " " + op;
  std::printf("%d cases exported, %d imported back and compared; ops exported but not imported back (importer gaps):%s\n",
              exported, compared, missing.c_str());
  EXPECT_GT(exported, 200);
  EXPECT_GT(compared, 0);
}

// Every elementwise op and reduction on every dtype its shape rule accepts passes ONNX's
// type constraints (ONNX's ops take fewer dtypes than weft's: Floor floats, Less numbers).
TEST(ExportDTypes, EveryAcceptedDTypePassesOnnxsTypeChecks) {
  int exported = 0, compared = 0;
  for (Op op : exported_ops()) {
    const OpInfo& info = op_info(op);
    if (info.category != OpCategory::Elementwise && info.category != OpCategory::Reduction) continue;
    for (DType dt : kAllDTypes) {
      Graph g("f");
      std::vector<ValueId> operands;
      for (int i = 0; i < info.arity; ++i) {
        const DType t = op == Op::Select && i == 0 ? DType::boolean : dt;
        operands.push_back(g.add_input("in" + std::to_string(i), Type{t, {2, 3}}));
      }
      Attrs attrs;
      if (op == Op::Cast) attrs["dtype"] = dt == DType::f32 ? DType::i64 : DType::f32;
      if (op == Op::Argmax) attrs["axis"] = int64_t{1};
      StatusOr<ValueId> y = add_typed_node(g, op, operands, attrs, Location{});
      if (!y.ok()) continue;  // The shape rule refuses this dtype.
      g.add_output(*y);
      StatusOr<onnx::ModelProto> m = export_onnx(g, {});
      if (dt == DType::u8 && (op == Op::Pow || op == Op::Sum)) {  // Refused: wrapping has no ONNX form.
        ASSERT_FALSE(m.ok());
        EXPECT_EQ(m.error().to_string(), "error: cannot export '" + std::string(op_name(op)) + "' to ONNX: ONNX's " +
                                             (op == Op::Pow ? "Pow" : "ReduceSum") +
                                             " takes no u8 (weft's wraps modulo 256)");
        continue;
      }
      EXPECT_TRUE(m.ok()) << op_name(op) << " on " << dtype_name(dt) << ": " << m.error().to_string();
      ++exported;
      std::vector<Tensor> data;
      for (const Input& in : g.inputs()) {
        Tensor t(g.type(in.value));
        for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, t.dtype() == DType::boolean ? i % 2 : 1 + i % 4);
        data.push_back(std::move(t));
      }
      SCOPED_TRACE(std::string(op_name(op)) + " on " + std::string(dtype_name(dt)));
      compared += expect_round_trip(g, {}, data, is_floating(dt) ? 1e-2 : 0);
    }
  }
  EXPECT_GT(exported, 100);
  std::printf("%d op and dtype pairs exported, %d imported back and compared\n", exported, compared);
}

// Formulas of several ONNX ops (gelu, log1p, rsqrt, mse) compute halves in f32 and round once,
// so that the import computes exactly what weft does.
TEST(ExportDTypes, HalfFormulasRoundOnce) {
  for (Op op : {Op::Gelu, Op::Log1p, Op::Rsqrt, Op::Mse}) {
    for (DType dt : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(std::string(op_name(op)) + " on " + std::string(dtype_name(dt)));
      Graph g("f");
      std::vector<ValueId> operands = {g.add_input("x", Type{dt, {16}})};
      if (op == Op::Mse) operands.push_back(g.add_input("z", Type{dt, {16}}));
      Attrs attrs;
      if (op == Op::Gelu) attrs["approximate"] = std::string("tanh");
      StatusOr<ValueId> y = add_typed_node(g, op, operands, attrs, Location{});
      ASSERT_TRUE(y.ok()) << y.error().to_string();
      g.add_output(*y);
      std::vector<Tensor> data;
      for (size_t k = 0; k < operands.size(); ++k) {
        Tensor t(Type{dt, {16}});
        for (int64_t i = 0; i < 16; ++i) t.set_double(i, 0.37 * static_cast<double>(i) * (k ? -1.3 : 1) + 0.01);
        data.push_back(std::move(t));
      }
      EXPECT_TRUE(expect_round_trip(g, {}, data, 0));
    }
  }
}

// The other ops, on every dtype their shape rules accept, likewise.
struct OneNode {
  Op op;
  std::vector<Shape> shapes;  ///< Operands of the swept dtype, except where `fixed` says.
  Attrs attrs;
  std::map<int, Type> fixed = {};  ///< Operands of a fixed type (indices, labels).
};

TEST(ExportDTypes, OtherOpsOnEveryAcceptedDType) {
  const std::vector<OneNode> nodes = {
      {Op::Matmul, {{2, 3}, {3, 4}}, {}},
      {Op::Matmul, {{3, 2}, {3, 4}}, {{"transpose_a", true}}},
      {Op::Conv, {{1, 2, 5, 5}, {3, 2, 3, 3}}, {{"padding", IntList{1, 1}}}},
      {Op::ConvBackwardInput, {{1, 3, 3, 3}, {3, 2, 3, 3}}, {{"input_shape", IntList{1, 2, 5, 5}}}},
      {Op::MaxPool2d, {{1, 2, 4, 4}}, {{"kernel", IntList{2, 2}}}},
      {Op::AvgPool2d, {{1, 2, 4, 4}}, {{"kernel", IntList{2, 2}}}},
      {Op::Softmax, {{2, 3}}, {}},
      {Op::LogSoftmax, {{2, 3}}, {}},
      {Op::LayerNorm, {{2, 3}, {3}, {3}}, {}},
      {Op::CrossEntropy, {{2, 3}, {2}}, {}, {{1, Type{DType::i64, {2}}}}},
      {Op::Mse, {{2, 3}, {2, 3}}, {}},
      {Op::Reshape, {{2, 3}}, {{"shape", IntList{3, 2}}}},
      {Op::Transpose, {{2, 3}}, {{"perm", IntList{1, 0}}}},
      {Op::BroadcastTo, {{3}}, {{"shape", IntList{2, 3}}}},
      {Op::Slice, {{4, 3}}, {{"start", IntList{1, 0}}, {"stop", IntList{4, 2}}, {"step", IntList{2, 1}}}},
      {Op::Concat, {{2, 3}, {1, 3}}, {{"axis", int64_t{0}}}},
      {Op::Pad, {{2, 3}}, {{"low", IntList{1, 0}}, {"high", IntList{0, 2}}}},
      {Op::Gather, {{3, 2}, {2}}, {{"axis", int64_t{0}}}, {{1, Type{DType::i64, {2}}}}},
      {Op::OneHot, {{3}}, {{"depth", int64_t{4}}}},
      {Op::ScatterAdd, {{3, 2}, {2}, {2, 2}}, {{"axis", int64_t{0}}}, {{1, Type{DType::i64, {2}}}}},
      {Op::Full, {}, {{"shape", IntList{2, 2}}, {"value", 1.0}}},
      {Op::Iota, {}, {{"shape", IntList{2, 3}}, {"axis", int64_t{1}}}},
  };
  int exported = 0, compared = 0;
  for (const OneNode& n : nodes) {
    for (DType dt : kAllDTypes) {
      Graph g("f");
      std::vector<ValueId> operands;
      for (size_t i = 0; i < n.shapes.size(); ++i) {
        auto it = n.fixed.find(static_cast<int>(i));
        operands.push_back(g.add_input("in" + std::to_string(i), it != n.fixed.end() ? it->second : Type{dt, n.shapes[i]}));
      }
      Attrs attrs = n.attrs;
      if (n.op == Op::Full || n.op == Op::Iota) attrs["dtype"] = dt;
      StatusOr<ValueId> y = add_typed_node(g, n.op, operands, attrs, Location{});
      if (!y.ok()) continue;
      g.add_output(*y);
      SCOPED_TRACE(std::string(op_name(n.op)) + " on " + std::string(dtype_name(dt)));
      StatusOr<onnx::ModelProto> m = export_onnx(g, {});
      if ((n.op == Op::Matmul && dt == DType::u8) || (n.op == Op::MaxPool2d && dt == DType::i64)) {
        ASSERT_FALSE(m.ok());
        EXPECT_EQ(m.error().to_string(), n.op == Op::Matmul
                                             ? "error: cannot export 'matmul' to ONNX: ONNX's MatMul and Gemm take "
                                               "no u8 (weft's wraps modulo 256)"
                                             : "error: cannot export 'max_pool2d' to ONNX: ONNX pools i64 tensors "
                                               "only through a float type, inexactly");
        continue;
      }
      EXPECT_TRUE(m.ok()) << m.error().to_string();
      if (!m.ok()) continue;
      ++exported;
      std::vector<Tensor> data;
      for (const Input& in : g.inputs()) {
        Tensor t(g.type(in.value));
        for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, t.dtype() == DType::boolean ? i % 2 : i % 2);
        data.push_back(std::move(t));
      }
      compared += expect_round_trip(g, {}, data, is_floating(dt) ? 1e-2 : 0);
    }
  }
  std::printf("%d op and dtype pairs exported, %d imported back and compared\n", exported, compared);
  EXPECT_GT(exported, 60);
}

TEST(Export, ModelHeaderAndOpset) {
  Graph g = parse("graph @f(%x: f32[2,3]) {\n  %y = relu(%x) : f32[2,3]\n  return %y\n}");
  StatusOr<onnx::ModelProto> m = export_onnx(g, {}, {.producer = "test", .graph_name = "net"});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->ir_version(), 8);
  ASSERT_EQ(m->opset_import_size(), 1);
  EXPECT_EQ(m->opset_import(0).version(), 17);
  EXPECT_EQ(m->producer_name(), "test");
  EXPECT_EQ(m->graph().name(), "net");
  EXPECT_EQ(op_types(*m), std::vector<std::string>{"Relu"});
  EXPECT_EQ(m->graph().node(0).name(), "relu/y");
  EXPECT_EQ(m->graph().node(0).doc_string(), "t.wir:2:3");
  ASSERT_EQ(m->graph().input_size(), 1);
  EXPECT_EQ(m->graph().input(0).name(), "x");
  EXPECT_EQ(m->graph().output(0).name(), "y");
  EXPECT_EQ(m->graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 3);
}

TEST(Export, ParametersBecomeNamedInitializers) {
  Graph g = parse(R"(graph @f(%x: f32[4,3], %fc.weight: f32[3,2] {param}, %fc.bias: f32[2] {param}) {
  %h = matmul(%x, %fc.weight) : f32[4,2]
  %y = add(%h, %fc.bias) : f32[4,2]
  return %y
})");
  std::map<std::string, Tensor> values = {{"fc.weight", f32({3, 2}, {1, 2, 3, 4, 5, 6})},
                                          {"fc.bias", f32({2}, {0.5, -0.5})}};
  StatusOr<onnx::ModelProto> m = export_onnx(g, values);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->graph().input_size(), 1);  // Initializers are not inputs.
  ASSERT_EQ(m->graph().initializer_size(), 2);
  EXPECT_EQ(m->graph().initializer(0).name(), "fc.weight");
  EXPECT_EQ(m->graph().initializer(1).name(), "fc.bias");
  StatusOr<ImportedGraph> back = import_onnx(exported_file(*m));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  ASSERT_EQ(back->params.size(), 2u);
  EXPECT_EQ(back->params[0].name, "fc.weight");
  EXPECT_EQ(back->values.at("fc.bias"), values.at("fc.bias"));
  EXPECT_TRUE(expect_round_trip(g, values, {f32({4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1})}, 0));
}

TEST(Export, MatmulTransposeFlags) {
  // Matrices: Gemm with transA/transB; batched: a Transpose of the flagged operand.
  Graph g = parse(R"(graph @f(%a: f32[3,4], %b: f32[5,3], %c: f32[2,3,4]) {
  %y = matmul(%a, %b) {transpose_a=true, transpose_b=true} : f32[4,5]
  %z = matmul(%c, %a) {transpose_a=true} : f32[2,4,4]
  return %y, %z
})");
  StatusOr<onnx::ModelProto> m = export_onnx(g, {});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Gemm", "Transpose", "MatMul"}));
  Tensor a(Type{DType::f32, {3, 4}}), b(Type{DType::f32, {5, 3}}), c(Type{DType::f32, {2, 3, 4}});
  for (int64_t i = 0; i < 12; ++i) a.set_double(i, static_cast<double>(i) - 5);
  for (int64_t i = 0; i < 15; ++i) b.set_double(i, 0.5 * static_cast<double>(i));
  for (int64_t i = 0; i < 24; ++i) c.set_double(i, 0.25 * static_cast<double>(i % 5));
  expect_round_trip(g, {}, {a, b, c}, 1e-6);
}

TEST(Export, OutputsThatAreInputsOrRepeatedGoThroughIdentity) {
  Graph g = parse("graph @f(%x: f32[2]) {\n  %y = neg(%x) : f32[2]\n  return %x, %y, %y\n}");
  StatusOr<onnx::ModelProto> m = export_onnx(g, {});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Neg", "Identity", "Identity"}));
  ASSERT_EQ(m->graph().output_size(), 3);
  EXPECT_EQ(m->graph().output(0).name(), "x_out");
  EXPECT_EQ(m->graph().output(1).name(), "y");
  EXPECT_EQ(m->graph().output(2).name(), "y_out");
  expect_round_trip(g, {}, {f32({2}, {1, -2})}, 0);
}

TEST(Export, FusedNodesAreExportedAsTheirBody) {
  Graph g = parse(R"(graph @f(%x: f32[4,5], %b: f32[5]) {
  %h = fused(%x, %b) : f32[4,5] ({
    ^body(%0: f32[4,5], %1: f32[5]):
      %t0 = add(%0, %1) : f32[4,5]
      %t1 = relu(%t0) : f32[4,5]
      return %t1
  })
  %s = fused(%h, %x) {kind="reduction"} : f32[] ({
    ^body(%0: f32[4,5], %1: f32[4,5]):
      %t0 = mul(%0, %1) : f32[4,5]
      %t1 = sum(%t0) : f32[]
      return %t1
  })
  return %s, %h
})");
  StatusOr<onnx::ModelProto> m = export_onnx(g, {});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Add", "Relu", "Mul", "ReduceSum"}));
  Tensor x(Type{DType::f32, {4, 5}});
  for (int64_t i = 0; i < 20; ++i) x.set_double(i, static_cast<double>(i % 7) - 3);
  expect_round_trip(g, {}, {x, f32({5}, {1, -1, 2, -2, 0})}, 1e-6);
}

constexpr std::string_view kRnn = R"(graph @rnn(%w: f32[3,3], %h0: f32[2,3], %xs: f32[4,2,3]) {
  %h, %ys = scan(%w, %h0, %xs) {consts=1, carries=1, length=4, reverse=REVERSE} : f32[2,3], f32[4,2,3] ({
    ^cell(%cw: f32[3,3], %ch: f32[2,3], %cx: f32[2,3]):
      %m = matmul(%ch, %cw) : f32[2,3]
      %s = add(%m, %cx) : f32[2,3]
      %n = tanh(%s) : f32[2,3]
      return %n, %s
  })
  return %h, %ys
})";

Graph rnn(bool reverse) {
  std::string text(kRnn);
  text.replace(text.find("REVERSE"), 7, reverse ? "true" : "false");
  return parse(text);
}

// Scan's body reads the consts from the outer scope; the carries are its state.
TEST(Export, ScanBecomesAnOnnxScan) {
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reverse" : "forward");
    Graph g = rnn(reverse);
    StatusOr<onnx::ModelProto> m = export_onnx(g, {});
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    ASSERT_EQ(op_types(*m), std::vector<std::string>{"Scan"});
    const onnx::NodeProto& s = m->graph().node(0);
    EXPECT_EQ(s.input_size(), 2);  // h0, xs: w is read from the outer scope.
    ASSERT_EQ(s.attribute_size(), reverse ? 4 : 2);
    const onnx::GraphProto& body = s.attribute(s.attribute_size() - 1).g();
    EXPECT_EQ(body.input_size(), 2);
    EXPECT_EQ(body.output_size(), 2);
    EXPECT_EQ(body.node(0).input(1), "w");
    std::vector<Tensor> data = {f32({2, 3}, {0.1f, 0.2f, 0.3f, -0.1f, -0.2f, -0.3f}), Tensor(Type{DType::f32, {4, 2, 3}})};
    for (int64_t i = 0; i < 24; ++i) data[1].set_double(i, std::sin(static_cast<double>(i)));
    Tensor w(Type{DType::f32, {3, 3}});
    for (int64_t i = 0; i < 9; ++i) w.set_double(i, 0.1 * static_cast<double>(i) - 0.4);
    data.insert(data.begin(), w);
    EXPECT_TRUE(expect_round_trip(g, {}, data, 1e-6));  // imported back as a weft scan
  }
}

TEST(ExportErrors, ScanWithEarlyExitIsRefused) {
  Graph g = parse(R"(graph @f(%h0: f32[2], %d0: bool[], %xs: f32[3,2]) {
  %h, %d, %ys = scan(%h0, %d0, %xs) {carries=2, length=3, stop=1} : f32[2], bool[], f32[3,2] ({
    ^c(%ch: f32[2], %cd: bool[], %cx: f32[2]):
      %n = add(%ch, %cx) : f32[2]
      return %n, %cd, %n
  })
  return %h
})");
  StatusOr<onnx::ModelProto> m = export_onnx(g, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().to_string(),
            "t.wir:2:3: error: cannot export 'scan' to ONNX: an early exit ('stop') has no exact ONNX "
            "Scan form");
}

// A loop with no xs (a for_n loop) becomes ONNX's Loop with a trip count; a reverse one
// turns its stacked ys around.
TEST(Export, LoopWithoutXsBecomesAnOnnxLoop) {
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reverse" : "forward");
    std::string text = R"(graph @f(%h0: f32[2], %w: f32[2]) {
  %h, %ys = scan(%w, %h0) {consts=1, carries=1, length=3, reverse=REVERSE} : f32[2], f32[3,2] ({
    ^c(%cw: f32[2], %ch: f32[2]):
      %n = mul(%ch, %cw) : f32[2]
      return %n, %ch
  })
  return %h, %ys
})";
    text.replace(text.find("REVERSE"), 7, reverse ? "true" : "false");
    Graph g = parse(text);
    StatusOr<onnx::ModelProto> m = export_onnx(g, {});
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    const std::vector<std::string> want =
        reverse ? std::vector<std::string>{"Constant", "Loop", "Constant", "Constant", "Constant", "Constant", "Slice"}
                : std::vector<std::string>{"Constant", "Loop"};
    EXPECT_EQ(op_types(*m), want);
    const onnx::GraphProto& body = m->graph().node(1).attribute(0).g();
    EXPECT_EQ(body.input_size(), 3);   // iteration, condition, h
    EXPECT_EQ(body.output_size(), 3);  // condition, h', y
    EXPECT_TRUE(expect_round_trip(g, {}, {f32({2}, {1, 2}), f32({2}, {0.5, -2})}, 0));
  }
}

TEST(ExportErrors, TrainingOpsAreRefusedNamingTheOpAndWhere) {
  Graph g("step");
  ValueId key = g.add_input("rng", Type{DType::i64, {2}}, InputKind::state);
  Location loc{"model.cc", 12, 3, "encoder > Dropout(0.1)"};
  StatusOr<ValueId> r = add_typed_node(g, Op::RandomUniform, {key}, {{"shape", IntList{4}}}, loc);
  ASSERT_TRUE(r.ok());
  g.add_output(*r);
  Tensor seed(Type{DType::i64, {2}});
  StatusOr<onnx::ModelProto> m = export_onnx(g, {{"rng", seed}});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().to_string(),
            "model.cc:12:3: error: cannot export 'random_uniform' to ONNX: weft's random numbers "
            "(Philox streams) have no ONNX form; export the inference graph (a model built with "
            "BuildOptions{training=false}) [in encoder > Dropout(0.1)]");

  Graph a = parse(R"(graph @f(%s: f32[2] {state}, %x: f32[2]) {
  %y = add(%s, %x) : f32[2]
  assign(%s, %y)
  return %y
})");
  m = export_onnx(a, {{"s", f32({2}, {0, 0})}});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().to_string(),
            "t.wir:3:3: error: cannot export 'assign' to ONNX: a state update has no ONNX form; export "
            "the inference graph (a model built with BuildOptions{training=false})");
}

TEST(ExportErrors, GradientOpsAreRefused) {
  Graph g = parse(R"(graph @f(%x: f32[1,1,4,4], %gy: f32[1,1,2,2]) {
  %g = max_pool2d_backward(%x, %gy) {kernel=[2,2]} : f32[1,1,4,4]
  return %g
})");
  StatusOr<onnx::ModelProto> m = export_onnx(g, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().to_string(),
            "t.wir:2:3: error: cannot export 'max_pool2d_backward' to ONNX: a gradient op has no ONNX "
            "form; export the forward graph");
}

TEST(ExportErrors, ParameterValuesMustBeGivenWithTheirTypes) {
  Graph g = parse(R"(graph @f(%x: f32[2], %w: f32[2] {param}) {
  %y = mul(%x, %w) : f32[2]
  return %y
})");
  StatusOr<onnx::ModelProto> m = export_onnx(g, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().to_string(),
            "t.wir:1:22: error: no value given for param 'w' (f32[2]): its initializer needs one");
  m = export_onnx(g, {{"w", f32({3}, {1, 2, 3})}});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().to_string(),
            "t.wir:1:22: error: the value given for param 'w' is f32[3], but the input is f32[2]");
}

TEST(ExportErrors, UntypedGraphIsRefused) {
  Graph g("f");
  ValueId x = g.add_input("x", Type{DType::f32, {2}});
  g.add_output(g.add_node(Op::Relu, {x}, {}, Location{"m.cc", 4, 1, ""}));
  StatusOr<onnx::ModelProto> m = export_onnx(g, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().to_string(),
            "m.cc:4:1: error: cannot export 'relu' to ONNX: its result %0 has no type (export a "
            "type-inferred graph)");
}

TEST(ExportErrors, LayerNormOverLeadingAxesIsRefused) {
  Graph g = parse(R"(graph @f(%x: f32[2,3,4], %g: f32[2,3], %b: f32[2,3]) {
  %y = layer_norm(%x, %g, %b) {axes=[0,1]} : f32[2,3,4]
  return %y
})");
  StatusOr<onnx::ModelProto> m = export_onnx(g, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().to_string(),
            "t.wir:2:3: error: cannot export 'layer_norm' to ONNX: LayerNormalization normalizes the "
            "trailing axes; these axes are not trailing");
}

// A model built for training draws dropout's mask; built for inference it exports.
TEST(ExportModel, ExportsTheInferenceBuild) {
  StatusOr<FlowPtr> net = FlowBuilder::from(Linear(4, 3)).through(Dropout(0.5)).through(ReLU()).build();
  ASSERT_TRUE(net.ok()) << net.error().to_string();
  for (bool training : {true, false}) {
    StatusOr<Model> model = (*net)->build({{"x", Type{DType::f32, {2, 4}}}}, {.training = training});
    ASSERT_TRUE(model.ok()) << model.error().to_string();
    StatusOr<std::map<std::string, Tensor>> values = initialize_parameter_map(*model, /*seed=*/1);
    ASSERT_TRUE(values.ok()) << values.error().to_string();
    StatusOr<onnx::ModelProto> m = export_model(*model, *values);
    if (training) {
      ASSERT_FALSE(m.ok());
      EXPECT_NE(m.error().to_string().find("error: cannot export 'random_bernoulli' to ONNX: weft's random "
                                           "numbers (Philox streams) have no ONNX form; export the inference "
                                           "graph (a model built with BuildOptions{training=false}) [in "),
                std::string::npos)
          << m.error().to_string();
      continue;
    }
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    EXPECT_EQ(m->graph().initializer_size(), 2);
    EXPECT_EQ(m->graph().initializer(0).name(), model->parameters()[0].name);
    Tensor x(Type{DType::f32, {2, 4}});
    for (int64_t i = 0; i < 8; ++i) x.set_double(i, static_cast<double>(i) - 3.5);
    expect_round_trip(model->graph(), *values, {x}, 1e-6);
  }
}

TEST(Export, WriteOnnxModelWritesAFileTheReaderReads) {
  Graph g = parse("graph @f(%x: f32[2]) {\n  %y = exp(%x) : f32[2]\n  return %y\n}");
  StatusOr<onnx::ModelProto> m = export_onnx(g, {});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const std::string dir = std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
  ASSERT_TRUE(write_onnx_model(dir + "/exp.onnx", *m).ok());
  StatusOr<OnnxFile> back = read_onnx_model(dir + "/exp.onnx");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->opset, 17);
  EXPECT_EQ(back->model.SerializeAsString(), m->SerializeAsString());
  Status bad = write_onnx_model(dir + "/no/such/dir/exp.onnx", *m);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find(dir + "/no/such/dir/exp.onnx"), std::string::npos)
      << bad.error().to_string();
}

TEST(Export, CheckOnnxModelReportsOnnxsMessage) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::NodeProto* n = m.mutable_graph()->add_node();
  n->set_op_type("Relu");
  n->add_input("nowhere");
  n->add_output("y");
  Status s = check_onnx_model(m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message.rfind("the ONNX model fails ONNX's checks: ", 0), 0u) << s.error().message;
}

}  // namespace exporter_test
}  // namespace
}  // namespace weft::onnx_io
