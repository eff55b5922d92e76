// --export-onnx on a training binary (//interop/onnx:aot_export_mlp, training/driver):
// the model it trained, written as ONNX, passes ONNX's own checker (python3-onnx) and,
// imported back into weft and run on the reference interpreter, computes what the
// binary's trained model computes; a model with no ONNX form is refused before
// training, and an export that fails at the end keeps the checkpoint written before it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "formats/npy.h"
#include "interop/onnx/aot_export_mlp_lib.h"
#include "interop/onnx/reader.h"
#include "interop/onnx/testing/onnx_builder.h"
#include "tests/testing/subprocess.h"
#include "training/driver/driver.h"

namespace weft::onnx_io {
namespace {
namespace aot_export_test {  // this file's names, apart in its package's unity test

using testing::CommandResult;
using testing::run_command;
using testing::test_tmpdir;

const std::string kBinary = "interop/onnx/aot_export_mlp";

std::string tmp(const std::string& name) { return test_tmpdir() + "/" + name; }

Tensor uniform(Shape shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor t(Type{DType::f32, shape});
  for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, std::uniform_real_distribution<double>(-1, 1)(rng));
  return t;
}

// The training split (32 rows: 4 steps of the binary's batch 8), written once; its flag.
std::string train_flag() {
  static const bool written = [] {
    return write_npy(tmp("x.npy"), uniform(Shape({32, 6}), 1)).ok() &&
           write_npy(tmp("y.npy"), uniform(Shape({32, 3}), 2)).ok();
  }();
  EXPECT_TRUE(written);
  return "--train=" + tmp("x.npy") + "," + tmp("y.npy");
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double d = 0;
  for (int64_t i = 0; i < a.numel(); ++i) d = std::max(d, std::abs(a.get_double(i) - b.get_double(i)));
  return d;
}

// The eval output of the binary's model after loading `checkpoint` ("": its initial values).
Tensor compiled_output(const Tensor& x, const std::string& checkpoint) {
  auto m = weft_aot::AotExportMlp::create(/*seed=*/0, /*num_threads=*/1);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  if (!checkpoint.empty()) {
    auto loaded = m->model().load(checkpoint, /*partial=*/false);
    EXPECT_TRUE(loaded.ok()) << loaded.error().to_string();
  }
  auto y = m->model().evaluate({x});
  EXPECT_TRUE(y.ok()) << y.error().to_string();
  return (*y)[0];
}

TEST(AotExportOnnx, WritesTheTrainedModelThatOnnxAndWeftReadBack) {
  const std::string ck = tmp("trained.safetensors"), onnx = tmp("trained.onnx");
  CommandResult r = run_command(kBinary + " " + train_flag() + " --epochs=1 --max-steps=3 --threads=1" +
                                " --checkpoint-out=" + ck + " --export-onnx=" + onnx);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("onnx: " + onnx + " (step 3)"), std::string::npos) << r.out;

  CommandResult checked = run_command(
      "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 -c 'import onnx, sys; "
      "m = onnx.load(sys.argv[1]); onnx.checker.check_model(m, full_check=True); "
      "print(m.opset_import[0].version, len(m.graph.initializer))' " + onnx);
  ASSERT_EQ(checked.exit_code, 0) << checked.out;
  EXPECT_EQ(checked.out, "17 4\n");  // two Linear layers' weights and biases

  const Tensor x = uniform(Shape({8, 6}), 3);
  const Tensor trained = compiled_output(x, ck);
  StatusOr<OnnxFile> file = read_onnx_model(onnx);
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  StatusOr<std::vector<Tensor>> imported = import_and_run(*file, {x});
  ASSERT_TRUE(imported.ok()) << imported.error().to_string();
  ASSERT_EQ(imported->size(), 1u);
  EXPECT_EQ((*imported)[0].type(), trained.type());
  EXPECT_LT(max_abs_diff((*imported)[0], trained), 1e-5);
  // The weights written are the trained ones, not the initial ones.
  EXPECT_GT(max_abs_diff((*imported)[0], compiled_output(x, "")), 1e-3);
}

// The driver in process, on a copy of the binary's table that `edit` changes.
struct DriverRun {
  int status;
  std::string err;
};

DriverRun run_with_table(const std::vector<std::string>& args, void (*edit)(aot::ModelTable&)) {
  static aot::ModelTable table;  // outlives the models made from it
  table = weft_aot::AotExportMlp::table();
  edit(table);
  driver::ModelFactory factory = [](const driver::ModelOptions& o) -> StatusOr<std::unique_ptr<driver::Trainable>> {
    WEFT_ASSIGN_OR_RETURN(auto m, aot::CompiledModel::create(table, o.seed, o.bind));
    return std::unique_ptr<driver::Trainable>(std::move(m));
  };
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  const int status = driver::run_driver(args, "aot_export_mlp", factory, out, err);
  std::string text(static_cast<size_t>(std::ftell(err)), '\0');
  std::rewind(err);
  text.resize(std::fread(text.data(), 1, text.size(), err));
  std::fclose(out);
  std::fclose(err);
  return {status, text};
}

TEST(AotExportOnnx, AModelWithNoOnnxFormIsRefusedBeforeTraining) {
  const std::string ck = tmp("refused.safetensors"), onnx = tmp("refused.onnx");
  DriverRun r = run_with_table({train_flag(), "--max-steps=2", "--checkpoint-out=" + ck, "--export-onnx=" + onnx},
                               [](aot::ModelTable& t) { t.onnx_refused = "op 'random_uniform' has no ONNX form"; });
  EXPECT_EQ(r.status, driver::kExitRuntime);
  EXPECT_EQ(r.err, "error: --export-onnx=" + onnx +
                       ": aot_export_mlp_lib has no ONNX form: op 'random_uniform' has no ONNX form\n");
  EXPECT_FALSE(std::filesystem::exists(ck));
  EXPECT_FALSE(std::filesystem::exists(onnx));
}

TEST(AotExportOnnx, AnExportThatFailsKeepsTheCheckpoint) {
  const std::string ck = tmp("kept.safetensors"), onnx = tmp("failed.onnx");
  DriverRun r = run_with_table({train_flag(), "--max-steps=2", "--checkpoint-out=" + ck, "--export-onnx=" + onnx},
                               [](aot::ModelTable& t) { t.onnx.initializers[0].value = "lost"; });
  EXPECT_EQ(r.status, driver::kExitRuntime);
  EXPECT_EQ(r.err, "error: --export-onnx=" + onnx + ": " + onnx +
                       ": no parameter, state or optimizer slot named 'lost'\n");
  EXPECT_FALSE(std::filesystem::exists(onnx));
  auto m = weft_aot::AotExportMlp::create(/*seed=*/0, /*num_threads=*/1);
  ASSERT_TRUE(m.ok());
  auto loaded = m->model().load(ck, /*partial=*/false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  EXPECT_EQ(m->model().steps(), 2);
}

TEST(AotExportOnnx, AnUnwritablePathIsRefusedBeforeTraining) {
  CommandResult r = run_command(kBinary + " " + train_flag() + " --export-onnx=/nonexistent/m.onnx");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("error: --export-onnx=/nonexistent/m.onnx: the directory /nonexistent does not"),
            std::string::npos)
      << r.out;
}

}  // namespace aot_export_test
}  // namespace
}  // namespace weft::onnx_io
