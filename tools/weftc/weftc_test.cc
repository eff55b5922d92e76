// End-to-end tests of the weftc binary: each runs it as a user would (a subprocess in
// the runfiles tree) and checks its exit status, what it printed and what it wrote.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <vector>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ir/json.h"
#include "ir/text.h"
#include "tests/testing/subprocess.h"
#include "formats/checkpoint.h"
#include "runtime/cuda/executor.h"
#include "formats/npy.h"
#include "formats/safetensors.h"

namespace weft {
namespace {

using Result = testing::CommandResult;

std::string temp_dir() { return testing::test_tmpdir(); }

/// Runs `weftc ARGS` with an optional environment prefix and captures its output.
Result weftc(const std::string& args, const std::string& env = "") {
  static const std::string binary = std::string(std::getenv("PWD")) + "/tools/weftc/weftc";
  return testing::run_command(env + " " + binary + " " + args);
}

std::string write_temp(const std::string& name, const std::string& contents) {
  std::string path = temp_dir() + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

const std::string kExample = "examples/mlp/";

std::string example_inputs() {
  std::string args;
  for (const char* name : {"x", "labels", "w1", "b1", "w2", "b2", "lr"}) {
    args += std::string(" --input ") + name + "=" + kExample + name + ".npy";
  }
  return args;
}

void expect_close(const std::string& actual_path, const std::string& expected_path, double tol) {
  auto actual = read_npy(actual_path);
  auto expected = read_npy(expected_path);
  ASSERT_TRUE(actual.ok()) << actual.error().to_string();
  ASSERT_TRUE(expected.ok()) << expected.error().to_string();
  ASSERT_EQ(actual->type(), expected->type()) << actual_path;
  for (int64_t i = 0; i < actual->numel(); ++i) {
    double a = actual->get_double(i), b = expected->get_double(i);
    EXPECT_LE(std::abs(a - b), tol + tol * std::abs(b)) << actual_path << " element " << i;
  }
}

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

TEST(Weftc, ResolvesRelativePathsAgainstBuildWorkingDirectory) {
  // `bazel run` starts weftc in its runfiles tree; relative paths are the user's.
  std::string cwd = temp_dir() + "/user_cwd";
  ::mkdir(cwd.c_str(), 0755);
  std::string wir;
  {
    std::ifstream in(kExample + "mlp.wir");
    wir.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(cwd + "/model.wir") << wir;
  Result r = weftc("check model.wir -o typed.wir", "BUILD_WORKING_DIRECTORY=" + cwd);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "model.wir: ok: @mlp, 7 inputs, 13 nodes, 2 outputs\n");
  std::ifstream typed(cwd + "/typed.wir");
  EXPECT_TRUE(typed.good());
}

TEST(Weftc, CheckReportsOneLocatedErrorPerMalformedFile) {
  struct Case {
    const char* name;
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"truncated.wir", "graph @g(%x: f32[2]) {\n  %y = neg(%x)\n",
       "truncated.wir:3:1: error: unexpected end of file; expected a statement or 'return'"},
      {"unknown_op.wir", "graph @g(%x: f32[2]) {\n  %y = negate(%x)\n  return %y\n}\n",
       "unknown_op.wir:2:8: error: unknown op 'negate'"},
      {"arity.wir", "graph @g(%x: f32[2]) {\n  %y = add(%x)\n  return %y\n}\n",
       "arity.wir:2:8: error: 'add' takes 2 operands, but 1 was given"},
      {"undefined.wir", "graph @g(%x: f32[2]) {\n  %y = add(%x, %z)\n  return %y\n}\n",
       "undefined.wir:2:16: error: use of undefined value '%z'"},
      {"shape.wir",
       "graph @g(%x: f32[2,3], %w: f32[4,5]) {\n  %y = matmul(%x, %w)\n  return %y\n}\n",
       "shape.wir:2:3: error: matmul: contraction dims differ: lhs f32[2,3] has 3 columns but rhs "
       "f32[4,5] has 4 rows"},
  };
  for (const Case& c : cases) {
    std::string path = write_temp(c.name, c.text);
    Result r = weftc("check " + path, "cd " + temp_dir() + " &&");
    EXPECT_EQ(r.exit_code, 1) << c.name;
    // Exactly one line, starting with FILE:LINE:COL: error:
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_EQ(r.out, temp_dir() + "/" + c.expected + "\n");
  }
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

// `weftc check --backend=cuda` lowers for the GPU (no GPU needed) and names every op that
// would run on the host, at its line.
TEST(Weftc, CheckBackendCudaNamesOpsThatWouldRunOnTheHost) {
  Result r = weftc("check " + kExample + "mlp.wir --backend=cuda");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("mlp.wir: cuda: every op runs on the GPU ("), std::string::npos) << r.out;
  const std::string path = write_temp("half.wir",
                                      "graph @g(%x: f16[4,6], %w: f16[6,3]) {\n"
                                      "  %y = matmul(%x, %w)\n  %z = neg(%y)\n  return %z\n}\n");
  r = weftc("check half.wir --backend=cuda", "cd " + temp_dir() + " &&");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("half.wir:2:3: error: program @g would run 2 ops on the host (no CUDA "
                       "kernel for it):\n  matmul at half.wir:2:3 (%y): f16[4,6], f16[6,3] -> "
                       "f16[4,3]\n  neg at half.wir:3:3"),
            std::string::npos)
      << r.out;
  r = weftc("check " + path + " --backend=cpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("error: weftc check: --backend=cpu is not checked; --backend=cuda checks "
                       "that every op runs on the GPU"),
            std::string::npos)
      << r.out;
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

TEST(Weftc, ProfileTimesEveryKernel) {
  Result r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --steps=4 --top=3");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("program @mlp on ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n4 steps, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GFLOP/s   GB/s"), std::string::npos) << r.out;
  // Three rows under the header: the --top.
  const size_t header = r.out.find("GFLOP/s");
  EXPECT_EQ(std::count(r.out.begin() + header, r.out.end(), '\n'), 4) << r.out;
  // --html: the viewer with the nodes filled by their share of the step.
  const std::string html = temp_dir() + "/profile.html";
  r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --steps=2 --html=" + html);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + html + "\n"), std::string::npos) << r.out;
  std::ifstream page(html);
  std::string text((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<title>profile of @mlp"), std::string::npos);
  EXPECT_GE(std::count(text.begin(), text.end(), '%'), 1);
  EXPECT_NE(text.find(" timed"), std::string::npos);
  r = weftc("profile " + kExample + "mlp.wir" + example_inputs() + " --steps=0");
  EXPECT_EQ(r.out, "error: weftc profile: --steps expects a whole number in [1, 1000000000], got '0'\n");
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

// --dump-dir on a whole training step (forward, backward, SGD updates with their
// assigns): every pass of the cpu pipeline, in order, as .wir, .json and .dot.
TEST(Weftc, DumpDirWritesEveryPassInEveryFormat) {
  const std::string dir = temp_dir() + "/dumps";
  Result r = weftc("dump examples/fashion_mnist/mlp_train_step.wir --after=schedule-memory --dump-dir=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  // NN-PASS.{dot,json,wir} for NN = 01, 02, ... in pipeline order: the default pipeline,
  // then the cpu backend's passes up to schedule-memory.
  ASSERT_EQ(files.size() % 3, 0u);
  std::vector<std::string> passes;
  for (size_t i = 0; i < files.size(); i += 3) {
    const std::string stem = files[i].substr(0, files[i].size() - 4);
    EXPECT_EQ(files[i], stem + ".dot");
    EXPECT_EQ(files[i + 1], stem + ".json");
    EXPECT_EQ(files[i + 2], stem + ".wir");
    char number[4];
    std::snprintf(number, sizeof(number), "%02zu", i / 3 + 1);
    EXPECT_EQ(stem.substr(0, 3), std::string(number) + "-") << stem;
    passes.push_back(stem);
  }
  ASSERT_GE(passes.size(), 8u);
  const std::vector<std::string> first = {"01-infer-types", "02-canonicalize", "03-fold-constants", "04-dce", "05-cse"};
  EXPECT_EQ(std::vector<std::string>(passes.begin(), passes.begin() + 5), first);
  EXPECT_EQ(passes.back().substr(3), "schedule-memory");
  EXPECT_NE(std::find_if(passes.begin(), passes.end(),
                         [](const std::string& p) { return p.substr(3) == "fuse-elementwise"; }),
            passes.end());
  // The last dump is what was printed; every dump parses back; the step keeps its assigns.
  std::ifstream last(dir + "/" + passes.back() + ".wir");
  std::string text((std::istreambuf_iterator<char>(last)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, r.out);
  EXPECT_NE(text.find("assign("), std::string::npos);
  EXPECT_NE(text.find("fused("), std::string::npos);
  for (const std::string& pass : passes) {
    std::ifstream json(dir + "/" + pass + ".json");
    std::string j((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(graph_from_json(j, pass).ok()) << pass;
    std::ifstream dot(dir + "/" + pass + ".dot");
    std::string d((std::istreambuf_iterator<char>(dot)), std::istreambuf_iterator<char>());
    EXPECT_EQ(d.rfind("digraph", 0), 0u) << pass;
  }
}

// merge-updates, lowering's last graph pass, is offered like the others (the graph the
// memory plan and the Program are made from); the reference backend lowers nothing, so
// it has no such pass; viz keeps schedule-memory as its default stage
// (VizWritesAPageAndAMemoryPicture).
TEST(Weftc, DumpAfterMergeUpdates) {
  const std::string step = "examples/fashion_mnist/mlp_train_step.wir";
  Result merged = weftc("dump " + step + " --after=merge-updates --no-locations");
  ASSERT_EQ(merged.exit_code, 0) << merged.out;
  Result scheduled = weftc("dump " + step + " --after=schedule-memory --no-locations");
  ASSERT_EQ(scheduled.exit_code, 0) << scheduled.out;
  // This step's six SGD update kernels already sit together after schedule-memory, so
  // merging them into one kernel moves no node.
  EXPECT_EQ(merged.out, scheduled.out);
  Result again = weftc("dump " + write_temp("merged.wir", merged.out) + " --after=parse --no-locations");
  EXPECT_EQ(again.out, merged.out);
  const std::string dir = temp_dir() + "/merge_dumps";
  Result r = weftc("dump " + step + " --after=merge-updates --dump-dir=" + dir);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files.back().substr(2), "-merge-updates.wir");
  std::ifstream last(dir + "/" + files.back());
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(last)), std::istreambuf_iterator<char>()),
            r.out);
  r = weftc("dump " + step + " --after=merge-updates --backend=reference");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("unknown pass 'merge-updates'"), std::string::npos) << r.out;
}

TEST(Weftc, DumpFormatsAndPasses) {
  std::string wir = kExample + "mlp.wir";
  Result r = weftc("dump " + wir + " --no-locations");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("  %h = matmul(%x, %w1) : f32[8,32]\n"), std::string::npos) << r.out;
  r = weftc("dump " + wir + " --format=dot");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("digraph \"mlp\" {", 0), 0u) << r.out;
  // JSON out and back in again gives the same text.
  std::string json = temp_dir() + "/mlp.json";
  r = weftc("dump " + wir + " --format=json -o " + json);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  Result from_json = weftc("dump " + json + " --after=parse");
  Result from_text = weftc("dump " + wir);
  EXPECT_EQ(from_json.out, from_text.out);
  r = weftc("dump " + wir + " --after=fuse");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("fuse"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("infer-types"), std::string::npos) << r.out;
  r = weftc("dump " + wir + " --format=svg");
  EXPECT_EQ(r.out, "error: weftc dump: unknown format 'svg'; formats: text, json, dot, ptx\n");
  // The cpu backend's passes: fused kernels print with their bodies and parse back. The
  // first Linear layer and its gelu are one contraction: the GEMM, then its epilogue.
  r = weftc("dump " + wir + " --after=fuse-elementwise --no-locations");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("  %a = fused(%x, %w1, %b1) {kind=\"contraction\"} : f32[8,32] ({\n"
                       "    ^body(%0: f32[8,16], %1: f32[16,32], %2: f32[32]):\n"
                       "      %t0 = matmul(%0, %1) : f32[8,32]\n"
                       "      %t1 = add(%t0, %2) : f32[8,32]\n"
                       "      %t2 = gelu(%t1) {approximate=\"tanh\"} : f32[8,32]\n"
                       "      return %t2\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(weftc("dump " + wir + " --after=fuse-contraction-epilogue --no-locations").exit_code,
            0);
  std::string fused = write_temp("fused.wir", r.out);
  Result again = weftc("dump " + fused + " --after=parse --no-locations");
  EXPECT_EQ(again.out, r.out);
  r = weftc("dump " + wir + " --after=fuse-elementwise --backend=reference");
  EXPECT_EQ(r.exit_code, 1);
  r = weftc("dump " + wir + " --backend=tpu");
  EXPECT_EQ(r.out, "error: weftc dump: unknown backend 'tpu'; backends: cpu, cuda, reference\n");
}

TEST(Weftc, CudaBackendDumpsPtxAndRunsWhereAGpuIs) {
  const std::string wir = kExample + "mlp.wir";
  // The GPU pipeline's IR, and its kernels as PTX: no GPU needed.
  Result r = weftc("dump " + wir + " --backend=cuda --after=fuse-elementwise --no-locations");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("fused("), std::string::npos) << r.out;
  r = weftc("dump " + wir + " --backend=cuda --format=ptx");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(".target sm_80"), std::string::npos) << r.out;
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

TEST(Weftc, VizWritesAPageAndAMemoryPicture) {
  std::string wir = kExample + "mlp.wir";
  std::string html = temp_dir() + "/mlp.html";
  Result r = weftc("viz " + wir + " -o " + html);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "wrote " + html + " (@mlp, 8 nodes, arena 1.31 KiB)\n");
  std::ifstream page(html);
  std::string text((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(text.find("after schedule-memory"), std::string::npos);
  // Without -o the page goes to standard output; any pass may be the last one.
  r = weftc("viz " + wir + " --backend=reference --after=dce --title=MLP");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("<title>MLP · weft</title>"), std::string::npos);
  EXPECT_NE(r.out.find("backend reference · after dce"), std::string::npos);
  EXPECT_EQ(r.out.find("data-tab=\"memory\""), std::string::npos);
  r = weftc("viz " + wir + " --after=parse");
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 200);
  r = weftc("viz " + wir + " --memory");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"memory-plan\"", 0), 0u);
  r = weftc("viz --help");
  EXPECT_EQ(r.out.rfind("usage: weftc viz FILE.wir", 0), 0u) << r.out;
}

TEST(Weftc, VizErrors) {
  std::string wir = kExample + "mlp.wir";
  Result r = weftc("viz " + wir + " --memory --backend=reference");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: weftc viz: --memory draws the cpu backend's memory plan; the reference "
                   "interpreter plans no memory (leave out --backend=reference)\n");
  r = weftc("viz " + wir + " --backend=tpu");
  EXPECT_EQ(r.out, "error: weftc viz: unknown backend 'tpu'; backends: cpu, reference\n");
  r = weftc("viz " + wir + " --memory --after=parse");
  EXPECT_EQ(r.out, wir + ":13:3: error: memory planning: %h has no type (run infer-types first)\n");
  r = weftc("viz");
  EXPECT_EQ(r.out, "error: weftc viz: expected one FILE argument, got 0 (see weftc viz --help)\n");
  // Without graphviz there is no layout; the error names the package.
  r = weftc("viz " + wir + " -o " + temp_dir() + "/never.html", "PATH=/nonexistent");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: cannot lay out the graph: graphviz's `dot` is not on PATH; install the "
                   "Debian package `graphviz` (tools/setup installs it)\n");
}

TEST(Weftc, GradWritesAGradientGraphThatRuns) {
  std::string wir = write_temp("f.wir",
                               "graph @f(%x: f32[2,3], %w: f32[3] {param}, %n: i64[2]) {\n"
                               "  %p = mul(%x, %w)\n"
                               "  %l = sum(%p)\n"
                               "  return %l\n"
                               "}\n");
  std::string out = temp_dir() + "/f_grad.wir";
  Result r = weftc("grad " + wir + " --wrt w,x -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = weftc("check " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("@f_grad, 3 inputs"), std::string::npos) << r.out;

  r = weftc("grad " + wir + " --wrt n -o " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, wir + ":1:44: error: cannot differentiate w.r.t. %n: it is i64[2], and only "
                         "floating-point inputs have gradients\n");
  r = weftc("grad " + wir + " -o " + out);
  EXPECT_EQ(r.out, "error: weftc grad: --wrt NAME,NAME,... is required\n");
  r = weftc("grad " + wir + " --wrt w --output=x");
  EXPECT_EQ(r.out, "error: weftc grad: --output expects a whole number in [0, 2147483647], got 'x'\n");
}

// A loop's gradient is a loop running the other way (autodiff/scan_grad.cc): the output
// checks and prints its reversed scan (its values: autodiff:scan_grad_test).
TEST(Weftc, GradOfALoopIsAReversedLoop) {
  std::string wir = write_temp("rnn.wir",
                               "graph @rnn(%w: f32[4,4] {param}, %h0: f32[2,4], %xs: f32[5,2,4]) {\n"
                               "  %h, %ys = scan(%w, %h0, %xs) {carries=1, consts=1, length=5} : f32[2,4], f32[5,2,4] ({\n"
                               "    ^cell(%cw: f32[4,4], %ch: f32[2,4], %cx: f32[2,4]):\n"
                               "      %m = matmul(%ch, %cw) : f32[2,4]\n"
                               "      %a = add(%m, %cx) : f32[2,4]\n"
                               "      %n = tanh(%a) : f32[2,4]\n"
                               "      return %n, %n\n"
                               "  })\n"
                               "  %q = mul(%ys, %ys)\n"
                               "  %l = sum(%q)\n"
                               "  return %l\n"
                               "}\n");
  std::string out = temp_dir() + "/rnn_grad.wir";
  Result r = weftc("grad " + wir + " --wrt w,h0,xs -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = weftc("check " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = weftc("dump " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("reverse=true"), std::string::npos) << "the gradient loop runs backwards\n" << r.out;
  EXPECT_NE(r.out.find("^grad_cell("), std::string::npos) << r.out;
}

// Every integer flag is read by one checked parser: a value that does not fit is refused,
// never wrapped (4294967296 used to become output 0 and succeed).
TEST(Weftc, IntegerFlagsAreCheckedNotWrapped) {
  std::string wir = write_temp("g.wir",
                               "graph @g(%x: f32[3]) {\n"
                               "  %l = sum(%x)\n"
                               "  return %l\n"
                               "}\n");
  for (const char* value : {"4294967296", "-1", "1.5", "99999999999999999999", "+0", ""}) {
    Result r = weftc("grad " + wir + " --wrt x --output=" + value);
    EXPECT_EQ(r.exit_code, 1) << value;
    EXPECT_EQ(r.out, std::string("error: weftc grad: --output expects a whole number in [0, "
                                 "2147483647], got '") + value + "'\n");
  }
  const std::string profile = "profile " + kExample + "mlp.wir" + example_inputs();
  for (const char* flag : {"steps", "warmup", "top"}) {
    Result r = weftc(profile + " --" + flag + "=4294967297");
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_EQ(r.out, std::string("error: weftc profile: --") + flag +
                         " expects a whole number in [1, 1000000000], got '4294967297'\n");
  }
}

// A directory where a file is expected is named as one, for the graph and for an input
// (they used to fail with "unexpected end of file" and "bad magic").
TEST(Weftc, ADirectoryGivenAsAFileIsNamedAsOne) {
  const std::string dir = temp_dir() + "/folder.wir";
  std::filesystem::create_directories(dir);
  Result r = weftc("check " + dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, dir + ": error: cannot read: it is a directory, not a file\n");
  std::string inputs = " --input x=" + dir;
  for (const char* name : {"labels", "w1", "b1", "w2", "b2", "lr"}) {
    inputs += std::string(" --input ") + name + "=" + kExample + name + ".npy";
  }
  r = weftc("run " + kExample + "mlp.wir" + inputs + " --out " + temp_dir() + "/dir_out");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, dir + ": error: cannot read: it is a directory, not a file\n");
}

// `weftc grad` then `weftc run` on the gradient fixtures, which torch.autograd made.
TEST(Weftc, GradMatchesTheGradientFixtures) {
  for (const char* name : {"mlp_cross_entropy", "conv_max_pool_mse", "layer_norm_gelu_softmax",
                           "broadcasting"}) {
    std::string dir = std::string("tests/fixtures/grad/") + name + "/";
    std::ifstream in(dir + "graph.wir");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    auto g = parse_graph(text, dir + "graph.wir");
    ASSERT_TRUE(g.ok()) << g.error().to_string();
    std::string wrt, inputs;
    std::vector<std::string> wrt_names;
    for (const Input& input : g->inputs()) {
      const std::string& n = g->value(input.value).name;
      inputs += " --input " + n + "=" + dir + n + ".npy";
      if (std::ifstream(dir + "grad_" + n + ".npy").good()) {
        wrt += (wrt.empty() ? "" : ",") + n;
        wrt_names.push_back(n);
      }
    }
    std::string grad = temp_dir() + "/" + name + "_grad.wir";
    Result r = weftc("grad " + dir + "graph.wir --wrt " + wrt + " -o " + grad);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::string out = temp_dir() + "/" + name + "_out";
    r = weftc("run " + grad + inputs + " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    for (size_t k = 0; k < wrt_names.size(); ++k) {
      expect_close(out + "/out_" + std::to_string(k) + ".npy", dir + "grad_" + wrt_names[k] + ".npy",
                   1e-9);
    }
  }
}

// Under a file-size limit a write fails with an error naming the file, and no temporary
// file is left (SIGXFSZ used to kill weftc with no message, leaving OUT.tmp.*).
TEST(Weftc, FileSizeLimitIsAnErrorNotASignal) {
  const std::string dir = temp_dir() + "/fsize";
  ::mkdir(dir.c_str(), 0755);
  Result r = weftc("dump " + kExample + "mlp.wir -o " + dir + "/big.wir", "ulimit -f 1 &&");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out.rfind(dir + "/big.wir: error: write to " + dir + "/big.wir.tmp.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" failed: File too large (" + dir + "/big.wir was left as it was)\n"), std::string::npos)
      << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

// A checkpoint of `0.weight`, `1.weight` with Adam-like slots and a global counter.
std::string small_checkpoint(const std::string& name) {
  const std::string path = temp_dir() + "/" + name;
  CheckpointSchema schema;
  schema.params = {{"0.weight", {DType::f32, {2, 2}}}, {"1.weight", {DType::f32, {3}}}};
  schema.structural_hash = 0x42;
  std::map<std::string, Tensor> values;
  for (const auto& p : schema.params) {
    values[p.name] = Tensor(p.type);
    values["optimizer." + p.name + ".m"] = Tensor(p.type);
  }
  values["optimizer.t"] = Tensor::scalar(DType::i64, 1);
  EXPECT_TRUE(save_checkpoint(path, schema, values, 3).ok());
  return path;
}

std::vector<std::string> keys_in(const std::string& path) {
  std::vector<std::string> keys;
  auto file = read_safetensors(path);
  EXPECT_TRUE(file.ok()) << file.error().to_string();
  for (const auto& [key, t] : file->tensors) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(Weftc, MigrateRenamesKeysAndTheirSlots) {
  const std::string in = small_checkpoint("migrate_in.safetensors");
  const std::string out = temp_dir() + "/migrate_out.safetensors";
  Result r = weftc("migrate " + in + " -o " + out + " --prefix=0.:encoder.0. --rename 1.weight=head.weight");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "  0.weight -> encoder.0.weight\n"
            "  1.weight -> head.weight\n"
            "  optimizer.0.weight.m -> optimizer.encoder.0.weight.m\n"
            "  optimizer.1.weight.m -> optimizer.head.weight.m\n"
            "wrote " + out + ": 4 key(s) renamed\n");
  EXPECT_EQ(keys_in(out), (std::vector<std::string>{"encoder.0.weight", "head.weight", "optimizer.encoder.0.weight.m",
                                                   "optimizer.head.weight.m", "optimizer.t"}));
  // From a JSON file, in place, with the target model's hash.
  const std::string json = write_temp("renames.json", "{\"encoder.0.weight\": \"0.weight\"}");
  r = weftc("migrate " + out + " -o " + out + " --renames=" + json + " --structural-hash=00000000000000ff");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "  encoder.0.weight -> 0.weight\n"
            "  optimizer.encoder.0.weight.m -> optimizer.0.weight.m\n"
            "wrote " + out + ": 2 key(s) renamed, weft.structural_hash set\n");
  auto file = read_safetensors(out);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->metadata.at("weft.structural_hash"), "00000000000000ff");
  EXPECT_EQ(file->metadata.at("weft.step"), "3");
}

TEST(Weftc, MigrateErrors) {
  const std::string in = small_checkpoint("migrate_errors.safetensors");
  const std::string out = temp_dir() + "/migrate_errors_out.safetensors";
  const std::string dup = write_temp("dup.json", "{\"a\": \"b\",\n \"a\": \"c\"}");
  const std::string list = write_temp("list.json", "[\"a\"]");
  const std::string number = write_temp("number.json", "{\"0.weight\": 3}");
  const std::string twice = write_temp("twice.json", "{\"0.weight\": \"w\"}");
  struct Case {
    std::string args;
    std::string expected;
  };
  const Case cases[] = {
      {"--rename 2.weight=x", in + ": error: cannot migrate: the checkpoint has no key 2.weight to rename; nothing "
                                   "was written"},
      {"--rename 0.weight=x --rename 1.weight=x",
       in + ": error: cannot migrate: '0.weight' and '1.weight' would both become 'x'; nothing was written"},
      {"--prefix=2.:x.", in + ": error: cannot migrate: no key of the checkpoint begins with '2.' (prefix rule "
                              "'2.:x.'); nothing was written"},
      {"--rename 0.weight", "error: weftc migrate: --rename expects OLD=NEW, got '0.weight'"},
      {"--prefix=0.", "error: weftc migrate: --prefix expects OLD:NEW (OLD not empty), got '0.'"},
      {"--rename 0.weight=a --renames=" + twice,
       "error: weftc migrate: '0.weight' is renamed twice, to 'a' and to 'w'"},
      {"--renames=" + dup, dup + ":2:2: error: a key appears twice in one object"},
      {"--renames=" + list, list + ": error: not a JSON object of old names to new names (the file holds a array)"},
      {"--renames=" + number, number + ": error: not a JSON object of old names to new names (the new name of "
                                        "'0.weight' is not a non-empty string)"},
      {"", "error: weftc migrate: nothing to rename; give --rename OLD=NEW, --renames FILE.json or --prefix "
           "OLD:NEW"},
      {"--prefix=0.:x. --structural-hash=12", "error: weftc migrate: --structural-hash expects 16 lowercase hex "
                                              "digits (as a refused load prints the model's), got '12'"},
  };
  for (const Case& c : cases) {
    Result r = weftc("migrate " + in + " -o " + out + " " + c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args;
    EXPECT_EQ(r.out, c.expected + "\n") << c.args;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.args;
  }
  Result r = weftc("migrate " + in + " --prefix=0.:x.");
  EXPECT_EQ(r.out, "error: weftc migrate: -o OUT.safetensors is required (it may be IN itself)\n");
  r = weftc("migrate " + temp_dir() + "/absent.safetensors -o " + out + " --prefix=0.:x.");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind(temp_dir() + "/absent.safetensors: error: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("No such file or directory"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(Weftc, HelpAndUsage) {
  for (const char* command : {"check", "dump", "run", "grad", "migrate"}) {
    Result r = weftc(std::string(command) + " --help");
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out.rfind(std::string("usage: weftc ") + command, 0), 0u) << r.out;
  }
  EXPECT_EQ(weftc("--help").exit_code, 0);
  Result r = weftc("frobnicate");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("error: unknown command 'frobnicate'", 0), 0u) << r.out;
  r = weftc("check --bogus x.wir");
  EXPECT_EQ(r.out,
            "error: weftc check: unknown flag '--bogus'; accepted flags: --out (-o), --backend "
            "(see weftc check --help)\n");
}

}  // namespace
}  // namespace weft
