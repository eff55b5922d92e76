// End-to-end tests of `weftc import` (and `weftc run --params`, which runs what it
// wrote): the binary run as a user would, its messages pinned.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "formats/npy.h"
#include "formats/safetensors.h"
#include "interop/onnx/testing/onnx_builder.h"
#include "tests/testing/subprocess.h"

namespace weft {
namespace {
namespace import_test {  // this file's names, apart in its package's unity test

using onnx_io::OnnxBuilder;
using testing::CommandResult;

CommandResult weftc(const std::string& args) {
  static const std::string binary = std::string(std::getenv("PWD")) + "/tools/weftc/weftc";
  return testing::run_command(binary + " " + args);
}

std::string dir() { return testing::test_tmpdir(); }

std::string write_model(OnnxBuilder b, const std::string& name) {
  std::string bytes;
  b.model().SerializeToString(&bytes);
  const std::string path = dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(std::move(s), v); }

// y = relu(x @ w + b) with x [batch, 3].
OnnxBuilder small_model() {
  OnnxBuilder b;
  b.input_symbolic("x", DType::f32, {"batch", "3"});
  b.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()
      ->mutable_shape()->mutable_dim(1)->set_dim_value(3);
  b.initializer("fc.w", f32({3, 2}, {1, -1, 2, -2, 3, -3}));
  b.initializer("fc.b", f32({2}, {0.5, 0.5}));
  b.node("MatMul", {"x", "fc.w"}, {"h"});
  b.node("Add", {"h", "fc.b"}, {"z"});
  b.node("Relu", {"z"}, {"y"});
  b.output("y", DType::f32);
  return b;
}

TEST(WeftcImport, WritesTheGraphAndItsWeightsWhichRunTakes) {
  const std::string model = write_model(small_model(), "small.onnx");
  const std::string wir = dir() + "/small.wir";
  CommandResult r = weftc("import " + model + " --dim batch=2 -o " + wir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "imported 3 ONNX nodes (opset 17) as 3 weft ops; 2 parameters and 0 state "
                      "inputs (8 values)\nwrote " + wir + " and " + dir() + "/small.safetensors\n");
  StatusOr<SafetensorsFile> w = read_safetensors(dir() + "/small.safetensors");
  ASSERT_TRUE(w.ok()) << w.error().to_string();
  ASSERT_NE(w->find("fc.w"), nullptr);
  EXPECT_EQ(*w->find("fc.b"), f32({2}, {0.5, 0.5}));

  ASSERT_TRUE(write_npy(dir() + "/x.npy", f32({2, 3}, {1, 1, 1, -1, 0, 0})).ok());
  r = weftc("run " + wir + " --params=" + dir() + "/small.safetensors --input x=" + dir() +
            "/x.npy --out " + dir() + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  StatusOr<Tensor> y = read_npy(dir() + "/out/out_0.npy");
  ASSERT_TRUE(y.ok());
  // x @ w + b = [6.5, -5.5], [-0.5, 1.5]; relu.
  EXPECT_EQ(*y, f32({2, 2}, {6.5, 0, 0, 1.5}));
}

TEST(WeftcImport, SymbolicDimensionWithoutASizeIsAnError) {
  const std::string model = write_model(small_model(), "dims.onnx");
  CommandResult r = weftc("import " + model + " -o " + dir() + "/dims.wir");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: " + model + ": input 'x': dimension 0 ('batch') is symbolic; weft's "
                      "shapes are static: give its size (weftc import --dim batch=N)\n");
  EXPECT_FALSE(std::filesystem::exists(dir() + "/dims.wir"));
  r = weftc("import " + model + " --dim batch=two -o " + dir() + "/dims.wir");
  EXPECT_EQ(r.out, "error: weftc import: --dim 'batch=two': 'two' is not a dimension size (a "
                      "whole number from 0 to 2^40)\n");
  r = weftc("import " + model + " --input-shape x=2x3x -o " + dir() + "/dims.wir");
  EXPECT_EQ(r.out, "error: weftc import: --input-shape 'x=2x3x': '' is not a dimension size (a "
                      "whole number from 0 to 2^40)\n");
  r = weftc("import " + model + " --input-shape x=4x3 -o " + dir() + "/dims.wir");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// A --dim no input declares (a typo) and a --dim or --input-shape given twice were
// silently ignored or overridden: each is an error now, and nothing is written.
TEST(WeftcImport, ADimensionNoInputHasOrOneGivenTwiceIsAnError) {
  const std::string model = write_model(small_model(), "typo.onnx");
  const std::string wir = dir() + "/typo.wir";
  CommandResult r = weftc("import " + model + " --dim batch=2 --dim Batch=3 -o " + wir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: " + model + ": no input has a symbolic dimension 'Batch' (--dim Batch=3); "
                      "the model's inputs have 'batch'\n");
  r = weftc("import " + model + " --dim batch=2 --dim batch=3 -o " + wir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc import: --dim batch given twice (batch=2 and batch=3)\n");
  r = weftc("import " + model + " --input-shape x=2x3 --input-shape x=4x3 -o " + wir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc import: --input-shape x given twice\n");
  EXPECT_FALSE(std::filesystem::exists(wir));
}

TEST(WeftcImport, UnsupportedNodeWritesNothing) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2});
  b.node("Frobnicate", {"x"}, {"y"}, "frob");
  b.output("y", DType::f32);
  const std::string model = write_model(b, "frob.onnx");
  CommandResult r = weftc("import " + model + " -o " + dir() + "/frob.wir");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, model + ": error: node 'frob' (Frobnicate, opset 17): the op type is not "
                      "supported [in frob (Frobnicate)]\n");
  EXPECT_FALSE(std::filesystem::exists(dir() + "/frob.wir"));
  EXPECT_FALSE(std::filesystem::exists(dir() + "/frob.safetensors"));
}

TEST(WeftcImport, FileThatIsNotAModel) {
  const std::string path = dir() + "/not_a_model.onnx";
  std::ofstream(path) << "graph @g() { }";
  CommandResult r = weftc("import " + path + " -o " + dir() + "/x.wir");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: " + path + ": not an ONNX model (the protobuf ModelProto does not parse)\n");
  r = weftc("import " + path);
  EXPECT_EQ(r.out, "error: weftc import: -o OUT.wir is required (see weftc import --help)\n");
}

TEST(WeftcImport, RunParamsOfTheWrongType) {
  const std::string model = write_model(small_model(), "typed.onnx");
  const std::string wir = dir() + "/typed.wir";
  ASSERT_EQ(weftc("import " + model + " --dim batch=2 -o " + wir).exit_code, 0);
  ASSERT_TRUE(write_safetensors(dir() + "/wrong.safetensors", {{"fc.b", f32({3}, {1, 2, 3})}}).ok());
  ASSERT_TRUE(write_npy(dir() + "/x2.npy", f32({2, 3}, {1, 1, 1, -1, 0, 0})).ok());
  CommandResult r = weftc("run " + wir + " --params=" + dir() + "/wrong.safetensors --input x=" +
                          dir() + "/x2.npy --out " + dir() + "/o2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("input %fc.b is declared f32[2] but '" + dir() +
                          "/wrong.safetensors' holds f32[3] (weft does not cast inputs)"),
            std::string::npos)
      << r.out;
}

TEST(WeftcExport, ImportedModelGoesBackOutAndRunsTheSame) {
  const std::string model = write_model(small_model(), "out_small.onnx");
  const std::string wir = dir() + "/out_small.wir";
  ASSERT_EQ(weftc("import " + model + " --dim batch=2 -o " + wir).exit_code, 0);
  const std::string again = dir() + "/again.onnx";
  CommandResult r = weftc("export " + wir + " --params=" + dir() + "/out_small.safetensors -o " + again);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "exported 3 weft ops as 3 ONNX nodes (opset 17), 2 initializers; wrote " +
                       again + "\n");
  // Back in: the same graph computes the same numbers.
  ASSERT_EQ(weftc("import " + again + " -o " + dir() + "/again.wir").exit_code, 0);
  ASSERT_TRUE(write_npy(dir() + "/x3.npy", f32({2, 3}, {1, 1, 1, -1, 0, 0})).ok());
  r = weftc("run " + dir() + "/again.wir --params=" + dir() + "/again.safetensors --input x=" +
            dir() + "/x3.npy --out " + dir() + "/o3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(*read_npy(dir() + "/o3/out_0.npy"), f32({2, 2}, {6.5, 0, 0, 1.5}));

  r = weftc("export " + wir + " -o " + dir() + "/none.onnx");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc export: no value for %fc.w, %fc.b; parameters and state become "
                   "initializers: give them with --params=FILE.safetensors\n");
  EXPECT_FALSE(std::filesystem::exists(dir() + "/none.onnx"));
}

// Counts of one are singular ("1 ONNX nodes ... 1 weft ops" before).
TEST(WeftcImport, TheSummaryCountsOneAsOne) {
  OnnxBuilder b;
  b.input("x", DType::f32, {2});
  b.initializer("w", f32({2}, {1, 2}));
  b.node("Mul", {"x", "w"}, {"y"});
  b.output("y", DType::f32);
  const std::string wir = dir() + "/one.wir", back = dir() + "/one_back.onnx";
  CommandResult r = weftc("import " + write_model(b, "one.onnx") + " -o " + wir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "imported 1 ONNX node (opset 17) as 1 weft op; 1 parameter and 0 state inputs (2 values)\nwrote " +
                       wir + " and " + dir() + "/one.safetensors\n");
  r = weftc("export " + wir + " --params=" + dir() + "/one.safetensors -o " + back);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "exported 1 weft op as 1 ONNX node (opset 17), 1 initializer; wrote " + back + "\n");
}

// An output written over a file the command reads destroys it (the model became .wir
// text; `export m.wir -o m.wir` wrote ONNX bytes over the graph): refused, however the
// path is spelled, and nothing is written.
TEST(WeftcOutputs, AnOutputNamingAFileTheCommandReadsIsRefused) {
  const std::string model = write_model(small_model(), "keep.onnx");
  const std::string wir = dir() + "/keep.wir", params = dir() + "/keep.safetensors";
  ASSERT_EQ(weftc("import " + model + " --dim batch=2 -o " + wir).exit_code, 0);
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string model_bytes = bytes(model), wir_bytes = bytes(wir), params_bytes = bytes(params);
  auto refused = [&](const std::string& args, const std::string& command, const std::string& flag,
                     const std::string& file) {
    CommandResult r = weftc(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_EQ(r.out, "error: weftc " + command + ": " + flag + " names the file it reads, '" + file +
                         "'; writing it there would lose that file: give the output another name\n")
        << args;
  };
  const std::string dotted = dir() + "/./keep.onnx";
  refused("import " + model + " --dim batch=2 -o " + dotted, "import", "-o", model);
  refused("import " + model + " --dim batch=2 -o " + dir() + "/k.wir --weights=" + model, "import",
          "--weights", model);
  refused("export " + wir + " --params=" + params + " -o " + wir, "export", "-o", wir);
  refused("export " + wir + " --params=" + params + " -o " + params, "export", "-o", params);
  refused("grad " + wir + " --wrt fc.w --seed=dy -o " + wir, "grad", "-o", wir);
  refused("viz " + wir + " -o " + wir, "viz", "-o", wir);
  refused("profile " + wir + " --params=" + params + " --html=" + params, "profile", "--html", params);
  EXPECT_EQ(bytes(model), model_bytes);
  EXPECT_EQ(bytes(wir), wir_bytes);
  EXPECT_EQ(bytes(params), params_bytes);
  EXPECT_FALSE(std::filesystem::exists(dir() + "/k.wir"));
}

TEST(WeftcImport, Help) {
  CommandResult r = weftc("import --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("usage: weftc import MODEL.onnx -o OUT.wir", 0), 0u) << r.out;
  EXPECT_NE(weftc("--help").out.find("  import  read an ONNX model as a weft graph"), std::string::npos);
  r = weftc("export --help");
  EXPECT_EQ(r.out.rfind("usage: weftc export FILE.wir -o OUT.onnx", 0), 0u) << r.out;
}

}  // namespace import_test
}  // namespace
}  // namespace weft
