// bench/weft_aot_worker against bench/weft_worker, as the suite runs them (child
// processes, the last stdout line a JSON object): on every model the two workers train
// the same steps (same parameter count, losses, arena), the AOT worker's process has no
// MLIR or LLVM mapped, the AOT worker's --names-out (from its library's table) equals the
// JIT worker's but for the loss, an INIT file written under weft's names loads into both,
// and the AOT worker's errors are pinned.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/process.h"
#include "formats/safetensors.h"

namespace weft::bench {
namespace {

using nlohmann::json;

const std::vector<std::string> kModels = {
    "transformer",      "mlp",     "residual_tower", "feedback_fixed", "gated_routing",
    "iterative_refine", "gru_seq", "conv_autoenc",   "lstm_seq",       "convnet"};

std::string tmp(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

/// Runs a worker (bench/weft_worker or bench/weft_aot_worker) with `args`.
ProcessResult run_worker(const std::string& worker, std::vector<std::string> args) {
  args.insert(args.begin(), "bench/" + worker);
  return run_process(args, {}, {}, tmp(worker + ".stderr"));
}

/// The JSON object on the last line of a successful run's stdout.
json result_of(const ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::string last;
  std::stringstream ss(r.out);
  for (std::string l; std::getline(ss, l);) {
    if (!l.empty()) last = l;
  }
  return json::parse(last, nullptr, /*allow_exceptions=*/false);
}

void expect_close(double aot, double jit, const std::string& what) {
  EXPECT_LE(std::abs(aot - jit), 1e-6 * (1 + std::abs(jit))) << what << ": aot " << aot
                                                             << ", jit " << jit;
}

TEST(AotWorker, TrainsLikeTheJitWorkerOnEveryModel) {
  const std::vector<std::string> args = {"--random-init", "--seed=3", "--warmup=1",
                                         "--epochs=1", "--steps=2"};
  for (const std::string& model : kModels) {
    SCOPED_TRACE(model);
    std::vector<std::string> a = args;
    a.push_back("--model=" + model);
    json jit = result_of(run_worker("weft_worker", a));
    json aot = result_of(run_worker("weft_aot_worker", a));
    ASSERT_TRUE(jit.is_object() && aot.is_object());
    EXPECT_EQ(aot["model"], model);
    EXPECT_EQ(aot["framework"], "weft");
    EXPECT_EQ(aot["config"].get<std::string>().rfind("aot cpu, ", 0), 0u) << aot["config"];
    EXPECT_EQ(aot["param_count"], jit["param_count"]);
    expect_close(aot["first_loss"].get<double>(), jit["first_loss"].get<double>(), "first loss");
    expect_close(aot["last_loss"].get<double>(), jit["last_loss"].get<double>(),
                 "loss of step 4");
    EXPECT_NE(aot["first_loss"], aot["last_loss"]);  // it trained
    // Both run the Program lower_to_program makes of the Trainer's step graph.
    EXPECT_EQ(aot["arena_bytes"], jit["arena_bytes"]);
    EXPECT_EQ(aot["arena_lower_bound_bytes"], jit["arena_lower_bound_bytes"]);
    EXPECT_EQ(aot["compiler_mapped"], false);
    EXPECT_EQ(aot["epoch_ms"].size(), 1u);
    EXPECT_GT(aot["peak_rss_increase_bytes"].get<int64_t>(), 0);
  }
}

// --precision=bf16 (bench:suite --weft=aot --precision=bf16): the model's bf16 library
// (bench/aot's NAME_bf16) trains like the JIT worker at bf16 on the GEMM-bound models.
TEST(AotWorker, Bf16TrainsLikeTheJitWorkerAtBf16) {
  for (const std::string model : {"mlp", "residual_tower", "transformer"}) {
    SCOPED_TRACE(model);
    const std::vector<std::string> a = {"--model=" + model, "--random-init", "--seed=3", "--warmup=0",
                                        "--epochs=1", "--steps=3", "--precision=bf16"};
    json jit = result_of(run_worker("weft_worker", a));
    json aot = result_of(run_worker("weft_aot_worker", a));
    ASSERT_TRUE(jit.is_object() && aot.is_object());
    EXPECT_EQ(aot["precision"], "bf16");
    const std::string config = aot["config"].get<std::string>();
    EXPECT_EQ(config.substr(config.size() - 6), ", bf16") << config;
    expect_close(aot["first_loss"].get<double>(), jit["first_loss"].get<double>(), "first loss");
    expect_close(aot["last_loss"].get<double>(), jit["last_loss"].get<double>(), "loss of step 3");
    EXPECT_EQ(aot["arena_bytes"], jit["arena_bytes"]);
    EXPECT_EQ(aot["compiler_mapped"], false);
  }
}

// --fuse-attention (bench:suite --fuse-attention, #31): the transformer's fused-attention
// library (bench/aot's transformer_fa) trains like the JIT worker with
// TrainOptions::fuse_attention, and like the unfused transformer (the CPU decomposes the
// attention again: fused_attention_test); a model without attention is refused by both.
TEST(AotWorker, FusedAttentionTrainsLikeTheJitWorkerFused) {
  const std::vector<std::string> a = {"--model=transformer", "--random-init", "--seed=3", "--warmup=0",
                                      "--epochs=1", "--steps=3"};
  std::vector<std::string> fused_args = a;
  fused_args.push_back("--fuse-attention");
  json plain = result_of(run_worker("weft_aot_worker", a));
  json jit = result_of(run_worker("weft_worker", fused_args));
  json aot = result_of(run_worker("weft_aot_worker", fused_args));
  ASSERT_TRUE(plain.is_object() && jit.is_object() && aot.is_object());
  EXPECT_EQ(aot["fuse_attention"], true);
  EXPECT_EQ(jit["fuse_attention"], true);
  EXPECT_EQ(plain["fuse_attention"], false);
  const std::string config = aot["config"].get<std::string>();
  EXPECT_NE(config.find(", fused attention"), std::string::npos) << config;
  expect_close(aot["first_loss"].get<double>(), jit["first_loss"].get<double>(), "first loss");
  expect_close(aot["last_loss"].get<double>(), jit["last_loss"].get<double>(), "loss of step 3");
  EXPECT_EQ(aot["arena_bytes"], jit["arena_bytes"]);
  EXPECT_EQ(aot["first_loss"], plain["first_loss"]);
  EXPECT_EQ(aot["compiler_mapped"], false);

  const std::vector<std::string> mlp = {"--model=mlp", "--random-init", "--steps=1", "--fuse-attention"};
  ProcessResult r = run_worker("weft_worker", mlp);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "weft_worker: error: --fuse-attention: fuse-attention finds no attention "
            "(softmax(q·kᵀ·scale + mask)·v, passes/fuse_attention.h) in mlp's step: nothing to fuse\n");
}

/// An INIT file as the suite's run.py writes it: every name of `--names-out`, deterministic
/// values, the inputs and the target (left out when it is the input itself).
void write_init(const std::string& names_path, const std::string& init_path) {
  json names = json::parse(read_file(names_path));
  std::vector<std::pair<std::string, Tensor>> tensors;
  auto make = [&](const json& spec) {
    Type t{spec["dtype"] == "I64" ? DType::i64 : DType::f32,
           Shape(spec["shape"].get<std::vector<int64_t>>())};
    Tensor out(t);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (t.dtype == DType::i64) {
        out.data<int64_t>()[i] = spec.contains("high") ? (i * 7919) % spec["high"].get<int64_t>() : 0;
      } else {
        out.data<float>()[i] = 0.02f * float((i * 7919) % 101 - 50) / 50.0f +
                               (spec["name"].get<std::string>().find("running_var") !=
                                        std::string::npos ? 1.0f : 0.0f);
      }
    }
    tensors.emplace_back(spec["name"].get<std::string>(), std::move(out));
  };
  for (const json& p : names["params"]) make(p);
  for (const json& in : names["inputs"]) make(in);
  if (!names["target"].contains("same_as")) make(names["target"]);
  Status s = write_safetensors(init_path, tensors);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
}

TEST(AotWorker, LoadsTheSuitesInitFileLikeTheJitWorker) {
  // conv_autoenc: batch-norm state (i64 num_batches_tracked), the target is the input;
  // transformer: token inputs and targets.
  for (const std::string model : {"conv_autoenc", "transformer"}) {
    SCOPED_TRACE(model);
    const std::string names = tmp(model + ".names.json"), init = tmp(model + ".init.safetensors");
    ASSERT_EQ(run_worker("weft_worker", {"--model=" + model, "--names-out=" + names}).exit_code, 0);
    // The AOT worker names as the JIT worker does (bench:suite --device=cuda names with it).
    const std::string aot_names = tmp(model + ".aot_names.json");
    ASSERT_EQ(run_worker("weft_aot_worker", {"--model=" + model, "--names-out=" + aot_names}).exit_code, 0);
    json jit_names = json::parse(read_file(names));
    jit_names.erase("loss");  // not in a library's table
    EXPECT_EQ(json::parse(read_file(aot_names)), jit_names);
    write_init(names, init);
    const std::vector<std::string> args = {"--model=" + model, "--init=" + init, "--warmup=0",
                                           "--epochs=1", "--steps=2"};
    json jit = result_of(run_worker("weft_worker", args));
    json aot = result_of(run_worker("weft_aot_worker", args));
    ASSERT_TRUE(jit.is_object() && aot.is_object());
    EXPECT_EQ(aot["init"], "file");
    expect_close(aot["first_loss"].get<double>(), jit["first_loss"].get<double>(), "first loss");
    expect_close(aot["last_loss"].get<double>(), jit["last_loss"].get<double>(), "second loss");
  }
}

/// The AOT worker's stderr for a run that must fail.
std::string error_of(const std::vector<std::string>& args) {
  ProcessResult r = run_worker("weft_aot_worker", args);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  return r.err;
}

TEST(AotWorker, ErrorsArePinned) {
  EXPECT_EQ(error_of({"--model=mlp", "--preset=paper", "--random-init"}),
            "weft_aot_worker: error: the AOT libraries of bench/aot are compiled at the cpu "
            "preset; preset 'paper' needs bench/weft_worker (the JIT)\n");
  EXPECT_EQ(error_of({"--model=bert", "--random-init"}),
            "weft_aot_worker: error: unknown model 'bert'; models: transformer, mlp, "
            "residual_tower, feedback_fixed, gated_routing, iterative_refine, gru_seq, "
            "conv_autoenc, lstm_seq, convnet\n");
  EXPECT_EQ(error_of({"--model=gated_routing", "--random-init", "--precision=bf16"}),
            "weft_aot_worker: error: --precision=bf16: bench/aot builds no bf16 library of "
            "gated_routing (only of the GEMM-bound transformer, mlp, residual_tower); use "
            "bench/weft_worker (the JIT)\n");
  EXPECT_EQ(error_of({"--model=mlp", "--random-init", "--precision=f16"}),
            "weft_aot_worker: error: --precision=f16: bench/aot builds the suite's models in f32, "
            "and transformer, mlp, residual_tower also in bf16\n");
  EXPECT_EQ(error_of({"--model=mlp", "--random-init", "--fuse-attention"}),
            "weft_aot_worker: error: --fuse-attention: mlp has no attention (softmax(q·kᵀ·scale + "
            "mask)·v) to fuse; bench/aot builds a fused-attention library of transformer only\n");
  EXPECT_EQ(error_of({"--model=transformer", "--random-init", "--fuse-attention", "--precision=bf16"}),
            "weft_aot_worker: error: --fuse-attention with --precision=bf16: bench/aot builds its "
            "fused-attention libraries in f32 only; drop one of them\n");
  EXPECT_EQ(error_of({"--model=mlp"}),
            "weft_aot_worker: error: give exactly one of --names-out=PATH, --init=PATH, "
            "--random-init or --print-params\n");
  EXPECT_EQ(error_of({"--model=mlp", "--random-init", "--epochs=x"}),
            "weft_aot_worker: error: bad value for --epochs: 'x' (an integer in [1, 100000])\n");
  // An INIT file of another model: every problem listed.
  const std::string init = tmp("wrong.safetensors");
  Tensor w(Type{DType::f32, Shape({2, 2})});
  ASSERT_TRUE(write_safetensors(init, {{"0.weight", w}, {"extra", w}}).ok());
  std::string err = error_of({"--model=feedback_fixed", "--init=" + init});
  EXPECT_NE(err.find("does not match weft's feedback_fixed:\n  0.weight is f32[2,2], weft "
                     "needs f32[128,128]\n  missing 0.bias f32[128]"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("\n  missing input.0 f32[32,128]\n  missing target f32[32,128]\n  extra "
                     "is not a weft parameter of feedback_fixed\n"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace weft::bench
