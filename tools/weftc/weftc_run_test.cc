// End-to-end tests of the weftc binary, run as a user would (a subprocess in the
// runfiles tree), checking its exit status, what it printed and what it wrote.
// `weftc run`: the MLP example against PyTorch's numbers, missing and mistyped inputs,
// where output files go, --check-numerics, --max-memory, and the cuda backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/npy.h"
#include "runtime/cuda/executor.h"
#include "tools/weftc/weftc_testing.h"

namespace weft {
namespace {
namespace weftc_run_test {  // this file's names, apart in its package's unity test

using namespace weftc_testing;

TEST(Weftc, RunsTheExampleAndMatchesPyTorch) {
  std::string out = temp_dir() + "/run/nested/dir";  // created on demand
  Result r = weftc("run " + kExample + "mlp.wir" + example_inputs() + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  expect_close(out + "/out_0.npy", kExample + "expected/out_0.npy", 1e-5);
  expect_close(out + "/out_1.npy", kExample + "expected/out_1.npy", 1e-5);
  expect_close(out + "/b2.npy", kExample + "expected/b2.npy", 1e-5);
  // Running again overwrites the outputs.
  r = weftc("run " + kExample + "mlp.wir" + example_inputs() + " --out " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

TEST(Weftc, RunRejectsMissingAndMistypedInputs) {
  std::string wir = kExample + "mlp.wir";
  Result r = weftc("run " + wir + " --input x=" + kExample + "x.npy --out " + temp_dir() + "/o");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out,
            "error: weftc run: missing --input for %labels (i64[8], data), %w1 (f32[16,32], "
            "param), %b1 (f32[32], param), %w2 (f32[32,10], param), %b2 (f32[10], param), %lr "
            "(f32[], data); every graph input must be given as --input NAME=PATH.npy (or be in "
            "the --params file)\n");

  // x.npy holds f32[8,16]; feeding it as w1 (f32[16,32]) is an error at w1's declaration.
  std::string inputs = example_inputs();
  inputs.replace(inputs.find("w1=" + kExample + "w1.npy"), 3 + kExample.size() + 6,
                 "w1=" + kExample + "x.npy");
  r = weftc("run " + wir + inputs + " --out " + temp_dir() + "/o");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, wir + ":10:12: error: input %w1 is declared f32[16,32] but '" + kExample +
                       "x.npy' holds f32[8,16] (weft does not cast inputs)\n");

  r = weftc("run " + wir + example_inputs() + " --input y=" + kExample + "x.npy --out o");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc run: graph @mlp in '" + wir +
                       "' has no input named %y; its inputs are %x, %labels, %w1, %b1, %w2, "
                       "%b2, %lr\n");

  r = weftc("run " + wir + example_inputs());
  EXPECT_EQ(r.out, "error: weftc run: --out DIR is required (see weftc run --help)\n");
  r = weftc("run " + wir + example_inputs() + " --out o --backend=tpu");
  EXPECT_EQ(r.out, "error: weftc run: unknown backend 'tpu'; backends: cpu, cuda, reference\n");
  r = weftc("run " + wir + " --input x --out o");
  EXPECT_EQ(r.out, "error: weftc run: --input expects NAME=PATH.npy, got 'x'\n");
  r = weftc("run " + wir + " --input x=missing.npy --out o");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("missing.npy"), std::string::npos) << r.out;
}

// Output files stay inside --out whatever the value names, and an updated input never
// takes an output's file (a parameter %"../../x" used to write x.npy two folders up, and
// one named out_0 to overwrite output 0).
TEST(Weftc, RunWritesOnlyInsideOutAndNeverOverAnOutput) {
  const std::string one = temp_dir() + "/one.npy";
  ASSERT_TRUE(write_npy(one, Tensor::scalar(DType::f32, 1)).ok());
  std::string wir = write_temp("names.wir",
                               "graph @names(%\"../../x\": f32[] {param}, %\"a/b%\": f32[] {param},\n"
                               "             %\".hidden\": f32[] {param}) {\n"
                               "  %y = add(%\"../../x\", %\"a/b%\")\n"
                               "  assign(%\"../../x\", %y)\n"
                               "  assign(%\"a/b%\", %y)\n"
                               "  assign(%\".hidden\", %y)\n"
                               "  return %y\n"
                               "}\n");
  const std::string out = temp_dir() + "/names/deep/out";
  Result r = weftc("run " + wir + " --input '../../x=" + one + "' --input 'a/b%=" + one +
                   "' --input .hidden=" + one + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::string> written;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(temp_dir() + "/names")) {
    written.push_back(entry.path().string());
  }
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, (std::vector<std::string>{temp_dir() + "/names/deep", out,
                                               out + "/%2E.%2F..%2Fx.npy",
                                               out + "/%2Ehidden.npy", out + "/a%2Fb%25.npy",
                                               out + "/out_0.npy"}));
  EXPECT_FALSE(std::filesystem::exists(temp_dir() + "/x.npy"));

  wir = write_temp("clash.wir",
                   "graph @clash(%out_0: f32[] {param}) {\n"
                   "  %y = add(%out_0, %out_0)\n"
                   "  assign(%out_0, %y)\n"
                   "  return %out_0\n"
                   "}\n");
  r = weftc("run " + wir + " --input out_0=" + one + " --out " + temp_dir() + "/clash");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc run: the updated input %out_0 would be written to 'out_0.npy', "
                   "the file of output 0; rename the input in '" + wir + "'\n");
  EXPECT_FALSE(std::filesystem::exists(temp_dir() + "/clash"));
}

// A bf16 output has no .npy form: refused before anything is written (out_0 was written,
// then out_1 failed).
TEST(Weftc, RunRefusesABf16OutputBeforeWritingAnything) {
  const std::string x = temp_dir() + "/x2.npy";
  ASSERT_TRUE(write_npy(x, Tensor::from_vector<float>({2}, {1, 2})).ok());
  const std::string wir = write_temp("bf16_out.wir",
                                     "graph @h(%x: f32[2]) -> (f32[2], bf16[2]) {\n"
                                     "  %b = cast(%x) {dtype=bf16}\n"
                                     "  return %x, %b\n"
                                     "}\n");
  Result r = weftc("run " + wir + " --input x=" + x + " --out " + temp_dir() + "/bf16_out");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc run: output 1 is bf16[2], which .npy cannot hold (NumPy has no bfloat16 "
                   "dtype): cast it to f32 in '" + wir + "'; nothing was written\n");
  EXPECT_FALSE(std::filesystem::exists(temp_dir() + "/bf16_out"));
}

TEST(Weftc, CheckNumericsNamesTheFirstNonFiniteOp) {
  std::string wir = write_temp("logs.wir", R"(graph @logs(%x: f32[4], %y: f32[4]) {
  %a = mul(%x, %y)
  %b = log(%a)
  %c = add(%b, %x)
  return %c
}
)");
  std::string x = temp_dir() + "/logs_x.npy", y = temp_dir() + "/logs_y.npy";
  ASSERT_TRUE(write_npy(x, Tensor::from_vector<float>(Shape({4}), {1, 2, 3, 4})).ok());
  ASSERT_TRUE(write_npy(y, Tensor::from_vector<float>(Shape({4}), {1, 1, 0, 1})).ok());
  const std::string run = "run " + wir + " --input x=" + x + " --input y=" + y + " --out " +
                          temp_dir() + "/logs_out";
  Result r = weftc(run);  // without the flag, -inf is a result like any other
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = weftc(run + " --check-numerics --backend=reference");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, wir + ":3:3: error: check-numerics: log produced -inf in %b (f32[4], element 2)\n");
  r = weftc(run + " --check-numerics");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, wir + ":3:3: error: check-numerics: log produced -inf (f32[4], element 2) "
                         "inside the fused kernel computing %c\n");
}

TEST(Weftc, MaxMemoryRefusesALargerPlan) {
  const std::string run = "run " + kExample + "mlp.wir" + example_inputs() + " --out " + temp_dir() + "/mm";
  Result r = weftc(run + " --max-memory=1K");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("error: program @mlp needs ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("but only 1.0 KiB are available (the memory limit); largest buffers: "),
            std::string::npos) << r.out;
  EXPECT_EQ(weftc(run + " --max-memory=1G").exit_code, 0);
  r = weftc(run + " --max-memory=lots");
  EXPECT_EQ(r.out, "error: weftc run: --max-memory expects a positive number of bytes (suffixes K, M, G), got 'lots'\n");
  r = weftc(run + " --max-memory=5T");
  EXPECT_EQ(r.out, "error: weftc run: --max-memory expects a positive number of bytes (suffixes K, M, G), got '5T'\n");
}

TEST(Weftc, CudaBackendDumpsPtxAndRunsWhereAGpuIs) {
  const std::string wir = kExample + "mlp.wir";
  // The GPU pipeline's IR, and its kernels as PTX: no GPU needed.
  Result r = weftc("dump " + wir + " --backend=cuda --after=fuse-elementwise --no-locations");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("fused("), std::string::npos) << r.out;
  r = weftc("dump " + wir + " --backend=cuda --format=ptx");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(".target sm_75"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(".visible .entry k0("), std::string::npos) << r.out;
  r = weftc("dump " + wir + " --format=ptx");
  EXPECT_EQ(r.out,
            "error: weftc dump: --format=ptx prints the CUDA backend's kernels; add --backend=cuda\n");
  r = weftc("run " + wir + example_inputs() + " --out o --backend=cuda --check-numerics");
  EXPECT_EQ(r.out, "error: weftc run: --check-numerics runs on the cpu and reference backends, "
                   "not yet on cuda\n");
  r = weftc("viz " + wir + " --backend=cuda");
  EXPECT_EQ(r.out, "error: weftc viz: unknown backend 'cuda'; backends: cpu, reference\n");
  // Running needs a GPU: without one the error says why; with one, the outputs.
  const std::string out = temp_dir() + "/cuda_out";
  r = weftc("run " + wir + example_inputs() + " --out " + out + " --backend=cuda");
  if (cuda::available()) {
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("out_0.npy"), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out.rfind("error: no CUDA device: ", 0), 0u) << r.out;
  }
}

// --precision=bf16: the matmuls run in bf16 (on the cpu backend's bf16 GEMMs, in the
// interpreter rounded as bf16): the outputs stay f32, within bf16's rounding of PyTorch's
// f32 results, and are not the f32 results themselves.
TEST(Weftc, RunAtBf16StaysNearTheF32Results) {
  for (const std::string backend : {"cpu", "reference"}) {
    const std::string out = temp_dir() + "/bf16_" + backend;
    Result r = weftc("run " + kExample + "mlp.wir" + example_inputs() + " --out " + out +
                     " --precision=bf16 --backend=" + backend);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("out_1.npy  f32[8,10]"), std::string::npos) << r.out;
    expect_close(out + "/out_0.npy", kExample + "expected/out_0.npy", 2e-2);
    expect_close(out + "/out_1.npy", kExample + "expected/out_1.npy", 2e-2);
    StatusOr<Tensor> p = read_npy(out + "/out_1.npy"), f32 = read_npy(kExample + "expected/out_1.npy");
    ASSERT_TRUE(p.ok() && f32.ok());
    double largest = 0;
    for (int64_t i = 0; i < p->numel(); ++i) {
      largest = std::max(largest, std::abs(p->get_double(i) - f32->get_double(i)));
    }
    EXPECT_GT(largest, 1e-5) << backend << ": the probabilities are f32's; were the matmuls cast?";
  }
}

}  // namespace weftc_run_test
}  // namespace
}  // namespace weft
