// The importer's core: inputs and symbolic dims, initializers as named parameters,
// import-time constants (shape arithmetic folded), and its refusals.
#include "interop/onnx/importer.h"

#include <gtest/gtest.h>

#include "frontend/flow.h"
#include "interop/onnx/testing/onnx_builder.h"
#include "ir/text.h"

namespace weft::onnx_io {
namespace {
namespace importer_test {  // this file's names, apart in its package's unity test

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

TEST(Importer, GemmInitializersBecomeNamedParameters) {
  OnnxBuilder b;
  b.input("x", DType::f32, {-1, 3});
  b.initializer("fc.weight", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  b.initializer("fc.bias", f32({2}, {0.5, -0.5}));
  auto& n = b.node("Gemm", {"x", "fc.weight", "fc.bias"}, {"y"}, "fc");
  set_attr(n, "transB", 1);
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file(), {.dims = {{"d0", 4}}});
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_EQ(g->params.size(), 2u);
  EXPECT_EQ(g->params[0].name, "fc.weight");
  EXPECT_EQ(g->params[0].kind, InputKind::param);
  EXPECT_EQ(g->graph.type(g->graph.inputs()[0].value).to_string(), "f32[4,3]");
  EXPECT_EQ(g->values.at("fc.bias"), f32({2}, {0.5, -0.5}));

  StatusOr<std::vector<Tensor>> y = import_and_run(b.file(), {f32({1, 3}, {1, 1, 1})});
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)[0], f32({1, 2}, {6.5, 14.5}));
}

TEST(Importer, ShapeArithmeticIsFoldedAtImportTime) {
  // Flatten written the way exporters do: Shape -> Gather -> Concat -> Reshape.
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 3, 4});
  b.node("Shape", {"x"}, {"s"});
  b.node("Constant", {}, {"minus1"}).add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("value_ints");
    a.set_type(onnx::AttributeProto::INTS);
    a.add_ints(-1);
    return a;
  }());
  b.node("Constant", {}, {"two"}).add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("value_ints");
    a.set_type(onnx::AttributeProto::INTS);
    a.add_ints(2);
    return a;
  }());
  b.node("Mul", {"minus1", "two"}, {"minus2"});  // folded: [-2]
  b.node("Div", {"minus2", "two"}, {"m"});        // folded: [-1]
  b.node("Reshape", {"x", "m"}, {"y"});
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_TRUE(g->params.empty());
  ASSERT_EQ(g->graph.nodes().size(), 1u) << print_graph(g->graph);
  EXPECT_EQ(g->graph.type(g->graph.outputs()[0]).to_string(), "f32[24]");
}

TEST(Importer, UnknownOpIsRefusedNamingTheNode) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2});
  b.node("Frobnicate", {"x"}, {"y"}, "frob_1");
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().to_string(),
            "test.onnx: error: node 'frob_1' (Frobnicate, opset 17): the op type is not "
            "supported [in frob_1 (Frobnicate)]");
}

TEST(Importer, OpConvertedOnlyFromALaterOpsetNamesIt) {
  OnnxBuilder b(9);
  b.input("x", DType::f32, {2, 3});
  b.node("LayerNormalization", {"x"}, {"y"}, "ln");
  b.output("y", DType::f32);
  EXPECT_EQ(import_onnx(b.file()).error().message,
            "node 'ln' (LayerNormalization, opset 9): the op type before opset 17 (weft converts "
            "it from that opset on) is not supported");
}

TEST(Importer, UnreadAttributeIsRefused) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2});
  set_attr(b.node("Relu", {"x"}, {"y"}), "flavour", 2);
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "node '#0' (Relu, opset 17): attribute 'flavour' is not supported");
}

TEST(Importer, AnInputTheOpDoesNotTakeIsRefused) {
  // As ONNX's schemas say: Abs takes one input, Add two, Clip three (the last two
  // optional); an empty name past them is an absent optional input, not refused. Variadic
  // ops (Sum) take any number.
  const auto error = [](const std::string& op, std::vector<std::string> inputs) {
    OnnxBuilder b;
    for (const char* x : {"x", "y", "z", "w"}) b.input(x, DType::f32, {2});
    for (const char* bound : {"lo", "hi"}) b.input(bound, DType::f32, {});
    b.node(op, std::move(inputs), {"out"}, "n");
    b.output("out", DType::f32);
    StatusOr<ImportedGraph> g = import_onnx(b.file());
    return g.ok() ? std::string("imported") : g.error().message;
  };
  EXPECT_EQ(error("Abs", {"x", "y", "z"}), "node 'n' (Abs, opset 17): it takes at most 1 input, got 3 (input 1 is 'y')");
  EXPECT_EQ(error("Add", {"x", "y", "z", "w"}),
            "node 'n' (Add, opset 17): it takes at most 2 inputs, got 4 (input 2 is 'z')");
  EXPECT_EQ(error("Clip", {"x", "", "", "w"}),
            "node 'n' (Clip, opset 17): it takes at most 3 inputs, got 4 (input 3 is 'w')");
  EXPECT_EQ(error("Abs", {"x", ""}), "imported");
  EXPECT_EQ(error("Clip", {"x", "lo", "hi"}), "imported");
  EXPECT_EQ(error("Sum", {"x", "y", "z", "w"}), "imported");
}

TEST(Importer, SymbolicDimensionMustBeBound) {
  OnnxBuilder b;
  b.input_symbolic("x", DType::f32, {"batch", ""});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "test.onnx: input 'x': dimension 0 ('batch') is symbolic; weft's shapes are static: "
            "give its size (weftc import --dim batch=N)");
  g = import_onnx(b.file(), {.dims = {{"batch", 2}}});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "test.onnx: input 'x': dimension 1 is unknown; weft's shapes are static: give its "
            "size (weftc import --input-shape x=...)");
  g = import_onnx(b.file(), {.input_shapes = {{"x", Shape{2, 5}}}});
  ASSERT_TRUE(g.ok()) << g.error().to_string();
}

TEST(Importer, NewerOpsetIsRefused) {
  OnnxBuilder b(18);
  b.input("x", DType::f32, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "test.onnx: opset 18 is newer than weft's importer reads (up to 17)");
}

// An IR version newer than the importer knows (99) imported silently.
TEST(Importer, NewerIrVersionIsRefused) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::f32);
  b.model().set_ir_version(99);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "test.onnx: IR version 99 is newer than weft's importer reads (up to 8)");
}

// An initializer that stands for a graph input of another shape won silently.
TEST(Importer, InitializerOfAnotherShapeThanItsInputIsRefused) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2, 3});
  b.input_symbolic("w", DType::f32, {"n", "2"});
  b.model().mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(
      1)->set_dim_value(2);
  b.initializer("w", f32({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}));
  b.node("MatMul", {"x", "w"}, {"y"});
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "test.onnx: input 'w' is declared as [n,2] but its initializer holds [3,3] (an initializer "
            "that stands for an input must have its shape)");
}

// A declared output shape that the import does not compute was not checked; a symbolic
// or unknown dim fits any size, and inputs given other shapes than declared skip it.
TEST(Importer, DeclaredOutputShapeMustBeComputed) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2, 3});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::f32);
  onnx::TensorShapeProto* shape =
      b.model().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  shape->add_dim()->set_dim_value(4);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "test.onnx: the model declares output 'y' with shape [batch,4], but it computes f32[2,3]");
  EXPECT_TRUE(import_onnx(b.file(), {.input_shapes = {{"x", Shape{2, 4}}}}).ok());
  shape->mutable_dim(1)->set_dim_value(3);
  EXPECT_TRUE(import_onnx(b.file()).ok());
  shape->mutable_dim(1)->clear_dim_value();
  EXPECT_TRUE(import_onnx(b.file()).ok());
}

TEST(Importer, OnnxModelIsAModuleWhoseInitializersKeepTheirNames) {
  OnnxBuilder b;
  b.input("x", DType::f32, {-1, 3});
  b.initializer("w", f32({3, 2}, {1, 0, 0, 1, 1, 1}));
  b.node("MatMul", {"x", "w"}, {"h"});
  b.node("Relu", {"h"}, {"y"});
  b.output("y", DType::f32);
  const std::string path = ::testing::TempDir() + "/two_ops.onnx";
  std::string bytes;
  ASSERT_TRUE(b.model().SerializeToString(&bytes));
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  StatusOr<Model> m =
      FlowBuilder::from(OnnxModel(path)).build({{"x", Type{DType::f32, {5, 3}}}});
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->parameters().size(), 1u);
  EXPECT_EQ(m->parameters()[0].name, "0.w");
  EXPECT_EQ(m->parameters()[0].init.kind, Initializer::Kind::Stored);
  EXPECT_EQ(m->graph().type(m->graph().outputs()[0]).to_string(), "f32[5,2]");
  // A flow input of the wrong type is refused naming the model's input.
  m = FlowBuilder::from(OnnxModel(path)).build({{"x", Type{DType::f32, {5, 4}}}});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("two_ops.onnx: input 'x' has dimension 1"), std::string::npos)
      << m.error().message;
}

TEST(Importer, NumberedInitializersDoNotClashWithWeftsNumbers) {
  // Old exporters number their values: an initializer named '1' beside weft's own %1.
  OnnxBuilder b(6);
  b.input("x", DType::f32, {3});
  b.initializer("1", f32({3}, {1, 2, 3}));
  b.node("Neg", {"x"}, {"0"});
  b.node("Neg", {"0"}, {"2"});
  b.node("Mul", {"2", "1"}, {"y"});
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_EQ(g->params.size(), 1u);
  EXPECT_EQ(g->params[0].name, "onnx_1");
}

TEST(Importer, AnOutputWeftDoesNotComputeIsRefusedWhereRead) {
  // BatchNormalization's running-mean output exists only in training (from opset 14 the
  // training_mode attribute says so; before it, naming the output does).
  OnnxBuilder b(15);
  b.input("x", DType::f32, {2, 2});
  for (const char* name : {"s", "b", "m", "v"}) b.initializer(name, f32({2}, {1, 1}));
  b.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "running_mean"}, "bn");
  b.node("Identity", {"y"}, {"out"});
  b.node("Add", {"out", "running_mean"}, {"z"}, "use");
  b.output("z", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "node 'use' (Add, opset 15): input 'running_mean' (output 1 of node 'bn' "
            "(BatchNormalization, opset 15), which weft does not compute) is not supported");
  EXPECT_TRUE(import_onnx(b.file(), {}, /*training=*/true).ok());
}

TEST(Importer, NamesDefinedTwiceAreRefused) {
  // Found by onnx_reader_fuzzer: two inputs of one name crashed the graph's name table.
  OnnxBuilder b;
  b.input("x", DType::f32, {2});
  b.input("x", DType::f32, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "test.onnx: the model declares input 'x' twice");
  // Also found by the fuzzer: an unnamed input took weft's fresh name "0", which the
  // next input's name then clashed with.
  OnnxBuilder u;
  u.input("", DType::f32, {2});
  u.input("0", DType::f32, {2});
  u.node("Add", {"", "0"}, {"y"});
  u.output("y", DType::f32);
  EXPECT_EQ(import_onnx(u.file()).error().message, "test.onnx: the model has an input with no name");

  OnnxBuilder c;
  c.input("x", DType::f32, {2});
  c.node("Relu", {"x"}, {"y"}, "first");
  c.node("Neg", {"x"}, {"y"}, "second");
  c.output("y", DType::f32);
  g = import_onnx(c.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "node 'second' (Neg, opset 17): output 'y' is already defined (an "
                               "ONNX graph assigns each name once)");

  // Two initializers of one name: the last one was used, silently.
  OnnxBuilder w;
  w.input("x", DType::f32, {1});
  w.initializer("w", Tensor::from_vector<float>({1}, {1}));
  w.initializer("w", Tensor::from_vector<float>({1}, {0}));
  w.node("Add", {"x", "w"}, {"y"});
  w.output("y", DType::f32);
  EXPECT_EQ(import_onnx(w.file()).error().message,
            "test.onnx: graph 'test' has two initializers named 'w' (an ONNX graph assigns each name once)");
}

// An output declared with another dtype than the model computes was written as computed.
TEST(Importer, AnOutputDeclaredWithAnotherDtypeIsRefused) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::i64);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "test.onnx: the model declares output 'y' as i64, but it computes f32[2]");
}

// Each dim of an input may be valid while their product overflows int64: refused at
// import (weftc import wrote such a graph, which weftc check then refused).
TEST(Importer, AnInputTooLargeToMeasureIsRefused) {
  OnnxBuilder b;
  b.input("x", DType::f32, {int64_t{1} << 40, int64_t{1} << 30});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DType::f32);
  StatusOr<ImportedGraph> g = import_onnx(b.file());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "test.onnx: input 'x' is f32[1099511627776,1073741824], whose size in bytes does not fit in 64 "
            "bits; check its dims (weftc import --input-shape x=...)");
  OnnxBuilder small;
  small.input("x", DType::f32, {2});
  small.node("Relu", {"x"}, {"y"});
  small.output("y", DType::f32);
  g = import_onnx(small.file(), {.input_shapes = {{"x", Shape{int64_t{1} << 40, int64_t{1} << 40}}}});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message,
            "test.onnx: input 'x' is f32[1099511627776,1099511627776], whose size in bytes does not fit in "
            "64 bits; check its dims (weftc import --input-shape x=...)");
}

TEST(Importer, DataInputsGivenAreCounted) {
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2}).input("y", DType::f32, {2});
  b.node("Add", {"x", "y"}, {"z"});
  b.output("z", DType::f32);
  const Tensor x(Type{DType::f32, {2}});
  EXPECT_EQ(name_data_inputs(b.file(), {x}).error().message, "1 input given, the model takes 2");  // "1 inputs"
  EXPECT_EQ(name_data_inputs(b.file(), {x, x, x}).error().message, "3 inputs given, the model takes 2");
}

TEST(Importer, ConstantInputsAreFixedAtImport) {
  // A model taking Reshape's shape as an input: refused, unless its value is given.
  OnnxBuilder b(13);
  b.input("x", DType::f32, {2, 3});
  b.input("shape", DType::i64, {1});
  b.node("Reshape", {"x", "shape"}, {"y"}, "r");
  b.output("y", DType::f32);
  std::vector<std::string> needed;
  StatusOr<ImportedGraph> g = import_onnx(b.file(), {.needs_constant = &needed});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "node 'r' (Reshape, opset 13): the shape computed at run time "
                               "(weft's shapes are static: it must be a constant or an "
                               "initializer) is not supported");
  EXPECT_EQ(needed, std::vector<std::string>{"shape"});  // the input to fix, by its name
  const Tensor shape = Tensor::from_vector<int64_t>({1}, {6});
  g = import_onnx(b.file(), {.constant_inputs = {{"shape", shape}}});
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ASSERT_EQ(g->graph.inputs().size(), 1u);  // x only
  EXPECT_EQ(g->graph.type(g->graph.outputs()[0]).to_string(), "f32[6]");
  EXPECT_EQ(import_onnx(b.file(), {.constant_inputs = {{"shape", f32({1}, {6})}}}).error().message,
            "test.onnx: input 'shape' is i64, its constant value f32[1]");
  EXPECT_EQ(import_onnx(b.file(), {.constant_inputs = {{"nope", shape}}}).error().message,
            "test.onnx: the model has no input named 'nope'");
}

}  // namespace importer_test
}  // namespace
}  // namespace weft::onnx_io
