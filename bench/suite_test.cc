// The suite's pure parts: its command line and the command lines it builds for each side
// (CPU and GPU), median, the loss check, the roofline arithmetic, canned worker results
// recorded, the table and the JSON list, and --device=cuda's message on a machine without
// a GPU. The suite itself is a benchmark program: no test runs it (bench/aot_worker_test
// runs both weft workers it chooses between on the CPU).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "bench/process.h"
#include "bench/roofline.h"
#include "bench/suite_options.h"
#include "bench/suite_report.h"

namespace weft::bench {
namespace {

TEST(Median, OddEvenEmpty) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({}), 0);
}

TEST(FirstLosses, ToleranceIsRelativeToPytorchPlusOne) {
  EXPECT_TRUE(first_losses_agree(1.00005, 1.0));   // |Δ| 5e-5 ≤ 2e-4
  EXPECT_FALSE(first_losses_agree(1.0003, 1.0));   // 3e-4 > 2e-4
  EXPECT_TRUE(first_losses_agree(0.0, 9e-5));      // ≤ 1e-4·(1 + 9e-5)
  EXPECT_TRUE(first_losses_agree(100.009, 100.0)); // 9e-3 ≤ 1.01e-2
  EXPECT_FALSE(first_losses_agree(100.02, 100.0));
  // bf16: residual_tower's first losses, 5.09028 (weft) and 5.09119 (PyTorch autocast).
  EXPECT_EQ(first_loss_tolerance("f32"), 1e-4);
  EXPECT_FALSE(first_losses_agree(5.09028101, 5.09118605, first_loss_tolerance("f32")));
  EXPECT_TRUE(first_losses_agree(5.09028101, 5.09118605, first_loss_tolerance("bf16")));
}

TEST(Roofline, ComputeBoundAndMemoryBound) {
  // 2 × (2·100·200·300) + 1 × (2·10·10·10) FLOP per step at 1e11 FLOP/s.
  std::vector<GemmShape> shapes = {{100, 200, 300, 2}, {10, 10, 10, 1}};
  auto flat = [](const GemmShape&) { return 1e11; };
  Roofline r = roofline(shapes, flat, /*state_bytes=*/1000, /*bandwidth_bytes_per_s=*/1e10);
  EXPECT_DOUBLE_EQ(r.flops_per_step, 2 * 2.0 * 100 * 200 * 300 + 2.0 * 10 * 10 * 10);
  EXPECT_DOUBLE_EQ(r.compute_ms_per_step, r.flops_per_step / 1e11 * 1e3);
  EXPECT_DOUBLE_EQ(r.memory_bytes_per_step, 2000);  // read once, written once
  EXPECT_DOUBLE_EQ(r.memory_ms_per_step, 2000 / 1e10 * 1e3);
  EXPECT_DOUBLE_EQ(r.epoch_ms, 50 * r.compute_ms_per_step);
  EXPECT_STREQ(r.bound_by(), "compute");
  EXPECT_EQ(r.sgemm_flops_per_s, (std::vector<double>{1e11, 1e11}));

  // Per-shape throughput: the slow shape dominates.
  auto per_shape = [](const GemmShape& s) { return s.m == 10 ? 1e6 : 1e11; };
  Roofline slow = roofline(shapes, per_shape, 1000, 1e10);
  EXPECT_DOUBLE_EQ(slow.compute_ms_per_step, (2 * 2.0 * 100 * 200 * 300 / 1e11 + 2000 / 1e6) * 1e3);

  // 1 GB of state at 10 GB/s: 0.2 s per step, memory-bound.
  Roofline mem = roofline(shapes, flat, /*state_bytes=*/1000000000, 1e10);
  EXPECT_DOUBLE_EQ(mem.epoch_ms, 50 * 200.0);
  EXPECT_STREQ(mem.bound_by(), "memory");
}

TEST(Roofline, SgemmTableMeasuresEachShapeOnce) {
  SgemmTable table;
  double a = table.flops({16, 16, 16, 3});
  double b = table.flops({16, 16, 16, 7});  // same shape, another count
  EXPECT_GT(a, 0);
  EXPECT_EQ(a, b);
  EXPECT_EQ(table.measured().size(), 1u);
}

ModelResult sample(bool with_weft) {
  ModelResult r;
  r.model = "mlp";
  if (with_weft) {
    RunSummary w;
    w.config = "weft";
    w.round_median_ms = {200, 220};
    w.round_epoch_ms = {{199, 200, 201}, {220}};
    w.first_loss = 1.25;
    w.param_count = 1181952;
    w.peak_bytes = 10 << 20;
    r.weft = w;
    r.weft_planned_bytes = 8 << 20;
    r.state_bytes = 4 << 20;
    r.gemm_shapes = {{64, 512, 256, 3}};
    r.roofline = roofline(r.gemm_shapes, [](const GemmShape&) { return 2e11; }, *r.state_bytes,
                          3e10);
  }
  for (int threads : {1, 2}) {
    RunSummary p;
    p.config = std::to_string(threads) + (threads == 1 ? " thread" : " threads") + " tuned";
    p.threads = threads;
    p.tuned_env = true;
    p.round_median_ms = threads == 1 ? std::vector<double>{100, 104} : std::vector<double>{150};
    p.first_loss = 1.25001;
    p.param_count = 1181952;
    p.peak_bytes = 30 << 20;
    p.openblas_corename = "Cooperlake";
    r.pytorch.push_back(p);
  }
  return r;
}

TEST(Table, RowsLegendAndNulls) {
  ModelResult failed;
  failed.model = "gru_seq";
  failed.error = "first-step losses differ";
  std::string table = format_table({sample(true), sample(false), failed});
  // Header, best PyTorch config (1 thread: median 102), weft median 210, ratio 210/102.
  EXPECT_NE(table.find("| model "), std::string::npos) << table;
  EXPECT_NE(table.find("arena / lower bound |"), std::string::npos) << table;
  EXPECT_NE(table.find("| mlp "), std::string::npos) << table;
  EXPECT_NE(table.find("102"), std::string::npos) << table;
  EXPECT_NE(table.find("1 thread tuned"), std::string::npos) << table;
  EXPECT_NE(table.find("210"), std::string::npos) << table;
  EXPECT_NE(table.find("2.06×"), std::string::npos) << table;
  EXPECT_NE(table.find("10.0 MiB"), std::string::npos) << table;
  EXPECT_NE(table.find("30.0 MiB"), std::string::npos) << table;
  EXPECT_NE(table.find("14.0 (memory)"), std::string::npos) << table;  // 8 MiB / 30 GB/s × 50
  EXPECT_NE(table.find("FAILED"), std::string::npos) << table;
  EXPECT_NE(table.find("roofline ms: 50 × max("), std::string::npos) << table;
  // Every row has the header's number of columns.
  size_t rows = 0;
  for (size_t pos = 0; (pos = table.find("\n|", pos)) != std::string::npos; ++pos) ++rows;
  EXPECT_EQ(rows, 4u) << table;  // separator + 3 models

  std::string checks = format_checks({sample(true)});
  EXPECT_NE(checks.find("mlp: params weft 1,181,952 = PyTorch 1,181,952; first loss weft 1.25 "
                        "PyTorch 1.25001; PyTorch's OpenBLAS core Cooperlake"),
            std::string::npos)
      << checks;
}

TEST(Json, OneObjectPerModelWithTheContractKeys) {
  ModelResult failed;
  failed.model = "gru_seq";
  failed.error = "boom";
  nlohmann::json list =
      nlohmann::json::parse(results_json({sample(true), failed}, "cpu", "aot", 5, 1, 2));
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), 2u);
  const nlohmann::json& m = list[0];
  for (const char* key : {"model", "pytorch_ms", "pytorch_config", "pytorch_openblas_corename",
                          "weft_ms", "weft_peak_bytes",
                          "pytorch_peak_bytes", "weft_planned_bytes", "arena_bytes",
                          "arena_lower_bound_bytes", "roofline_ms"}) {
    EXPECT_TRUE(m.contains(key)) << key;
    EXPECT_TRUE(list[1].contains(key)) << key;
  }
  EXPECT_EQ(m["model"], "mlp");
  EXPECT_EQ(m["weft_path"], "aot");
  EXPECT_EQ(m["precision"], "f32");
  EXPECT_EQ(m["pytorch_ms"], 102.0);
  EXPECT_EQ(m["pytorch_config"], "1 thread tuned");
  EXPECT_EQ(m["weft_ms"], 210.0);
  EXPECT_EQ(m["weft_peak_bytes"], 10 << 20);
  EXPECT_EQ(m["pytorch_peak_bytes"], 30 << 20);
  EXPECT_EQ(m["weft_planned_bytes"], 8 << 20);
  EXPECT_TRUE(m["arena_bytes"].is_null());
  EXPECT_TRUE(m["arena_lower_bound_bytes"].is_null());
  EXPECT_GT(m["roofline_ms"].get<double>(), 0);
  EXPECT_EQ(m["param_count_weft"], 1181952);
  EXPECT_EQ(m["pytorch_configs"].size(), 2u);
  EXPECT_EQ(m["gemm_shapes"][0], nlohmann::json({64, 512, 256, 3}));
  EXPECT_EQ(m["sgemm_gflops"], nlohmann::json({200.0}));
  EXPECT_TRUE(m["error"].is_null());
  // The kernel OpenBLAS ran in PyTorch's processes: the best configuration's, and each one's.
  EXPECT_EQ(m["pytorch_openblas_corename"], "Cooperlake");
  EXPECT_EQ(m["pytorch_configs"][0]["openblas_corename"], "Cooperlake");
  EXPECT_EQ(m["pytorch_configs"][1]["openblas_corename"], "Cooperlake");
  EXPECT_TRUE(m["weft"]["openblas_corename"].is_null());
  EXPECT_TRUE(list[1].contains("pytorch_openblas_corename"));
  EXPECT_TRUE(list[1]["pytorch_openblas_corename"].is_null());
  EXPECT_TRUE(list[1]["weft_ms"].is_null());
  EXPECT_TRUE(list[1]["roofline_ms"].is_null());
  EXPECT_EQ(list[1]["error"], "boom");
}

TEST(Options, WeftPathDefaultsToTheJit) {
  StatusOr<SuiteOptions> o = parse_suite_options({"--preset=cpu"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->weft, "jit");
  EXPECT_EQ(o->epochs, 5);
  EXPECT_EQ(o->warmup, 1);
  EXPECT_EQ(o->models, suite_models());
  EXPECT_EQ(o->precision, "f32");
  StatusOr<SuiteOptions> bf16 = parse_suite_options({"--preset=cpu", "--precision=bf16"});
  ASSERT_TRUE(bf16.ok()) << bf16.error().to_string();
  EXPECT_EQ(bf16->precision, "bf16");
}

// --help (or -h) asks for the help text, whatever else is given; it names every flag
// of the usage line.
TEST(Options, HelpIsAskedForAndNamesEveryFlag) {
  for (const char* flag : {"--help", "-h"}) {
    StatusOr<SuiteOptions> o = parse_suite_options({"--models=mlp", flag});
    ASSERT_TRUE(o.ok()) << o.error().to_string();
    EXPECT_TRUE(o->help);
  }
  StatusOr<SuiteOptions> o = parse_suite_options({"--preset=cpu"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_FALSE(o->help);
  EXPECT_FALSE(parse_suite_options({"--help=yes"}).ok());
  const std::string usage = kSuiteUsage, help = kSuiteHelp;
  int flags = 0;
  for (size_t at = usage.find("--"); at != std::string::npos; at = usage.find("--", at + 2)) {
    const size_t end = usage.find_first_of("=] ", at);
    const std::string flag = usage.substr(at, end - at);
    if (flag == "--") continue;  // `bazel run //bench:suite --`
    ++flags;
    EXPECT_NE(help.find("  " + flag), std::string::npos) << flag;
  }
  EXPECT_EQ(flags, 14);
}

TEST(Options, WeftAotChoosesTheAotWorker) {
  StatusOr<SuiteOptions> o =
      parse_suite_options({"--weft=aot", "--preset=cpu", "--models=mlp,convnet", "--rounds=3"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->weft, "aot");
  EXPECT_EQ(o->models, (std::vector<std::string>{"mlp", "convnet"}));
  EXPECT_EQ(o->rounds, 3);
  StatusOr<SuiteOptions> jit = parse_suite_options({"--preset=paper", "--weft=jit"});
  ASSERT_TRUE(jit.ok()) << jit.error().to_string();
  EXPECT_EQ(jit->weft, "jit");
  EXPECT_EQ(jit->epochs, 20);
  // bf16 AOT: the models bench/aot builds in bf16, by default and when named.
  StatusOr<SuiteOptions> bf16 = parse_suite_options({"--weft=aot", "--preset=cpu", "--precision=bf16"});
  ASSERT_TRUE(bf16.ok()) << bf16.error().to_string();
  EXPECT_EQ(bf16->models, (std::vector<std::string>{"transformer", "mlp", "residual_tower"}));
  StatusOr<SuiteOptions> mlp = parse_suite_options({"--weft=aot", "--preset=cpu", "--precision=bf16", "--models=mlp"});
  ASSERT_TRUE(mlp.ok()) << mlp.error().to_string();
  EXPECT_EQ(mlp->models, (std::vector<std::string>{"mlp"}));
}

TEST(Options, ErrorsNameTheFlag) {
  auto error = [](std::vector<std::string> args) {
    StatusOr<SuiteOptions> o = parse_suite_options(args);
    return o.ok() ? std::string("(ok)") : o.error().message;
  };
  EXPECT_EQ(error({"--preset=cpu", "--weft=xla"}),
            "bad value for --weft: 'xla' (jit: bench/weft_worker, the Trainer's JIT; aot: "
            "bench/weft_aot_worker, the libraries of bench/aot)");
  EXPECT_EQ(error({"--preset=cpu", "--weft"}), "flag --weft needs a value (--weft=...)");
  EXPECT_EQ(error({"--weft=aot"}), "--preset=cpu or --preset=paper is required");
  EXPECT_EQ(error({"--preset=cpu", "--precision=f64"}), "bad value for --precision: 'f64' (f32 or bf16)");
  EXPECT_EQ(error({"--preset=cpu", "--precision=f16"}),
            "--precision=f16: the suite's peer, PyTorch 1.13, autocasts to bfloat16 only on the "
            "CPU; use --precision=bf16");
  EXPECT_EQ(error({"--preset=cpu", "--weft=aot", "--precision=bf16", "--models=mlp,convnet"}),
            "--precision=bf16 with --weft=aot: bench/aot builds bf16 libraries of transformer, mlp, "
            "residual_tower only (the GEMM-bound models), not of convnet; drop it from --models or "
            "use --weft=jit");
  EXPECT_EQ(error({"--preset=gpu"}), "bad value for --preset: 'gpu' (cpu or paper)");
  EXPECT_EQ(error({"--preset=cpu", "--models=mlp,bert"}),
            "unknown model 'bert' in --models; the models are transformer, mlp, residual_tower, "
            "feedback_fixed, gated_routing, iterative_refine, gru_seq, conv_autoenc, lstm_seq, "
            "convnet");
  EXPECT_EQ(error({"--preset=cpu", "--epochs=0"}), "bad value for --epochs: '0' (an integer ≥ 1)");
  // Found before the run, not after it (the whole suite ran, then "cannot write").
  EXPECT_EQ(error({"--preset=cpu", "--json=/nonexistent/suite.json"}),
            "--json=/nonexistent/suite.json: the directory /nonexistent does not exist");
  EXPECT_EQ(error({"--preset=cpu", "--pytorch-only=1"}), "unknown flag '--pytorch-only=1'");
  EXPECT_EQ(error({"--preset=paper", "--device=gpu"}), "bad value for --device: 'gpu' (cpu or cuda)");
  EXPECT_EQ(error({"--preset=cpu", "--device=cuda"}),
            "--device=cuda: bench/aot builds its CUDA libraries at the paper preset; use "
            "--preset=paper");
  EXPECT_EQ(error({"--preset=paper", "--device=cuda", "--weft=jit"}),
            "--device=cuda runs weft from the AOT CUDA libraries of bench/aot "
            "(bench/weft_aot_cuda_worker); --weft=jit is the CPU suite's");
  EXPECT_EQ(error({"--preset=paper", "--device=cuda", "--precision=f16"}),
            "--device=cuda --precision=f16: planned (bench/aot builds its CUDA libraries in f32 and "
            "bf16, and PyTorch's side has no loss scaling); use --precision=bf16");
}

TEST(Options, CpuCommandLines) {
  StatusOr<SuiteOptions> o = parse_suite_options({"--preset=cpu", "--epochs=2", "--warmup=0"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->device, "cpu");
  EXPECT_EQ(names_worker(*o), "bench/weft_worker");
  EXPECT_EQ(timed_worker(*o), "bench/weft_worker");
  EXPECT_EQ(weft_timed_args(*o, "W", "mlp", "I.safetensors"),
            (std::vector<std::string>{"W", "--model=mlp", "--preset=cpu", "--init=I.safetensors",
                                      "--epochs=2", "--warmup=0"}));
  std::vector<PytorchConfig> configs = pytorch_configs(*o, "mlp");
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(configs[0].label, "1 thread");
  EXPECT_EQ(configs[1].label, "1 thread tuned");
  EXPECT_EQ(configs[3].label, "2 threads tuned");
  EXPECT_TRUE(configs[0].env.empty());
  EXPECT_EQ(configs[3].env.at("OMP_WAIT_POLICY"), "PASSIVE");
  EXPECT_EQ(pytorch_timed_args(*o, "run.py", "mlp", "I", configs[3]),
            (std::vector<std::string>{"/usr/bin/python3", "run.py", "--model=mlp", "--preset=cpu",
                                      "--init=I", "--epochs=2", "--warmup=0", "--threads=2"}));
  StatusOr<SuiteOptions> aot = parse_suite_options({"--preset=cpu", "--weft=aot", "--precision=bf16"});
  ASSERT_TRUE(aot.ok()) << aot.error().to_string();
  EXPECT_EQ(timed_worker(*aot), "bench/weft_aot_worker");
  EXPECT_EQ(weft_timed_args(*aot, "W", "mlp", "I").back(), "--precision=bf16");
  EXPECT_EQ(pytorch_timed_args(*aot, "run.py", "mlp", "I", configs[0]).back(), "--precision=bf16");
}

TEST(Options, CudaRunsTheAotCudaWorkerAndPytorchsGpuConfigs) {
  StatusOr<SuiteOptions> o = parse_suite_options({"--preset=paper", "--device=cuda"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->device, "cuda");
  EXPECT_EQ(o->weft, "aot");
  EXPECT_EQ(o->epochs, 20);
  EXPECT_EQ(o->warmup, 3);
  EXPECT_EQ(o->models, suite_models());
  // The CUDA worker names the models too: no compiler on the GPU machine.
  EXPECT_EQ(names_worker(*o), "bench/weft_aot_cuda_worker");
  EXPECT_EQ(timed_worker(*o), "bench/weft_aot_cuda_worker");
  EXPECT_TRUE(parse_suite_options({"--preset=paper", "--device=cuda", "--weft=aot"}).ok());
  EXPECT_EQ(weft_timed_args(*o, "W", "lstm_seq", "I"),
            (std::vector<std::string>{"W", "--model=lstm_seq", "--preset=paper", "--init=I",
                                      "--epochs=20", "--warmup=3"}));
  auto labels = [](const std::vector<PytorchConfig>& configs) {
    std::vector<std::string> out;
    for (const PytorchConfig& c : configs) out.push_back(c.label);
    return out;
  };
  // torch.compile only where it pays (the transformer and the mlp).
  EXPECT_EQ(labels(pytorch_configs(*o, "transformer")),
            (std::vector<std::string>{"eager", "fused", "compile", "cuda_graph"}));
  std::vector<PytorchConfig> lstm = pytorch_configs(*o, "lstm_seq");
  EXPECT_EQ(labels(lstm), (std::vector<std::string>{"eager", "fused", "cuda_graph"}));
  EXPECT_EQ(lstm[2].threads, 0);
  EXPECT_TRUE(lstm[2].env.empty());
  EXPECT_EQ(pytorch_timed_args(*o, "run.py", "lstm_seq", "I", lstm[2]),
            (std::vector<std::string>{"/usr/bin/python3", "run.py", "--model=lstm_seq",
                                      "--preset=paper", "--init=I", "--epochs=20", "--warmup=3",
                                      "--device=cuda", "--config=cuda_graph"}));
}

// #30: bf16 on the GPU, every model (bench/aot builds NAME_cuda_bf16 for all ten), both
// sides told the precision.
TEST(Options, CudaBf16RunsAllTenInBf16OnBothSides) {
  StatusOr<SuiteOptions> o = parse_suite_options({"--preset=paper", "--device=cuda", "--precision=bf16"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->precision, "bf16");
  EXPECT_EQ(o->models, suite_models());
  EXPECT_EQ(suite_aot_bf16_models("cuda"), suite_models());
  StatusOr<SuiteOptions> convnet =
      parse_suite_options({"--preset=paper", "--device=cuda", "--precision=bf16", "--models=convnet,gru_seq"});
  ASSERT_TRUE(convnet.ok()) << convnet.error().to_string();
  EXPECT_EQ(convnet->models, (std::vector<std::string>{"convnet", "gru_seq"}));
  EXPECT_EQ(weft_timed_args(*o, "W", "convnet", "I"),
            (std::vector<std::string>{"W", "--model=convnet", "--preset=paper", "--init=I",
                                      "--epochs=20", "--warmup=3", "--precision=bf16"}));
  std::vector<PytorchConfig> configs = pytorch_configs(*o, "mlp");
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(pytorch_timed_args(*o, "run.py", "mlp", "I", configs[3]),
            (std::vector<std::string>{"/usr/bin/python3", "run.py", "--model=mlp", "--preset=paper",
                                      "--init=I", "--epochs=20", "--warmup=3", "--device=cuda",
                                      "--config=cuda_graph", "--precision=bf16"}));
}

// #31: --fuse-attention. on: the models with attention, fused; both: those both ways (the
// A/B), the others once; refused where it cannot apply, naming why.
TEST(Options, FuseAttentionRunsTheModelsWithAttentionFusedOrBothWays) {
  StatusOr<SuiteOptions> off = parse_suite_options({"--preset=cpu"});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->fuse_attention, "off");
  EXPECT_EQ(weft_fuse_attention_runs(*off, "transformer"), std::vector<bool>{false});

  StatusOr<SuiteOptions> on = parse_suite_options({"--preset=cpu", "--fuse-attention=on"});
  ASSERT_TRUE(on.ok()) << on.error().to_string();
  EXPECT_EQ(on->models, suite_attention_models());
  EXPECT_EQ(suite_attention_models(), std::vector<std::string>{"transformer"});
  EXPECT_EQ(weft_fuse_attention_runs(*on, "transformer"), std::vector<bool>{true});
  EXPECT_EQ(weft_timed_args(*on, "W", "transformer", "I", true),
            (std::vector<std::string>{"W", "--model=transformer", "--preset=cpu", "--init=I",
                                      "--epochs=5", "--warmup=1", "--fuse-attention"}));

  // The GPU suite's A/B: all ten models, the transformer's weft side both ways.
  StatusOr<SuiteOptions> both = parse_suite_options({"--preset=paper", "--device=cuda", "--fuse-attention=both"});
  ASSERT_TRUE(both.ok()) << both.error().to_string();
  EXPECT_EQ(both->models, suite_models());
  EXPECT_EQ(weft_fuse_attention_runs(*both, "transformer"), (std::vector<bool>{false, true}));
  EXPECT_EQ(weft_fuse_attention_runs(*both, "mlp"), std::vector<bool>{false});
  EXPECT_EQ(weft_timed_args(*both, "W", "transformer", "I", false).back(), "--warmup=3");
  EXPECT_EQ(weft_timed_args(*both, "W", "transformer", "I", true).back(), "--fuse-attention");
  // PyTorch's side does not change.
  const std::vector<PytorchConfig> configs = pytorch_configs(*both, "transformer");
  ASSERT_EQ(configs.size(), 4u);
  EXPECT_EQ(pytorch_timed_args(*both, "run.py", "transformer", "I", configs[2]).back(), "--config=compile");

  auto error = [](std::vector<std::string> args) {
    StatusOr<SuiteOptions> o = parse_suite_options(args);
    return o.ok() ? std::string("(ok)") : o.error().message;
  };
  EXPECT_EQ(error({"--preset=cpu", "--fuse-attention=yes"}),
            "bad value for --fuse-attention: 'yes' (off, on or both)");
  EXPECT_EQ(error({"--preset=cpu", "--fuse-attention"}),
            "flag --fuse-attention needs a value (--fuse-attention=...)");
  EXPECT_EQ(error({"--preset=cpu", "--fuse-attention=on", "--models=transformer,mlp"}),
            "--fuse-attention=on: mlp has no attention (softmax(q·kᵀ·scale + mask)·v) to fuse; the "
            "models with attention: transformer. Drop mlp from --models, or use "
            "--fuse-attention=both (those both ways, the others once)");
  EXPECT_EQ(error({"--preset=cpu", "--fuse-attention=both", "--models=mlp,convnet"}),
            "--fuse-attention=both: none of --models has attention to fuse; the models with "
            "attention: transformer");
  EXPECT_EQ(error({"--preset=paper", "--device=cuda", "--precision=bf16", "--fuse-attention=both"}),
            "--fuse-attention=both with --precision=bf16: bench/aot builds its fused-attention "
            "libraries (of transformer) in f32 only; drop one of the two");
  // The JIT fuses at any precision.
  EXPECT_EQ(error({"--preset=cpu", "--precision=bf16", "--fuse-attention=on"}), "(ok)");
}

TEST(Options, CudaWithoutADeviceSaysSo) {
  const std::string dev = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
                          "/fake_dev";
  mkdir(dev.c_str(), 0755);
  EXPECT_EQ(cuda_device_missing(dev).value_or("(none)"),
            "--device=cuda: no CUDA device on this machine (no " + dev + "/nvidia0 or " + dev +
                "/nvidiactl): the suite on a GPU needs an NVIDIA GPU with its driver, and "
                "PyTorch with CUDA for its peer (tests/cuda/suite_check.sh runs it on a GPU "
                "machine)");
  std::ofstream(dev + "/nvidiactl") << "";
  EXPECT_TRUE(cuda_device_missing(dev).has_value());
  std::ofstream(dev + "/nvidia0") << "";
  EXPECT_FALSE(cuda_device_missing(dev).has_value());
}

TEST(Report, CannedGpuResultsMakeTheTableAndJson) {
  // The last lines a CUDA worker and run.py --device=cuda print (abridged), two rounds.
  const nlohmann::json weft1 = nlohmann::json::parse(
      R"({"model": "mlp", "framework": "weft", "config": "aot cuda, one CUDA graph",
          "epoch_ms": [6.0, 6.2], "median_ms": 6.1, "first_loss": 1.0000001,
          "param_count": 1181952, "peak_rss_increase_bytes": 104857600,
          "compiler_mapped": false, "device_peak_bytes": 283115520})");
  nlohmann::json weft2 = weft1;
  weft2["median_ms"] = 5.9;
  const nlohmann::json graph = nlohmann::json::parse(
      R"({"model": "mlp", "framework": "pytorch", "config": "cuda, cuda_graph", "device": "cuda",
          "epoch_ms": [6.7], "median_ms": 6.7, "first_loss": 1.0, "param_count": 1181952,
          "peak_rss_increase_bytes": 734003200, "device_peak_bytes": 254803968,
          "openblas_corename": null})");
  ModelResult r;
  r.model = "mlp";
  r.weft = RunSummary{};
  r.weft->config = "weft aot cuda";
  record_run("weft", weft1, *r.weft);
  record_run("weft", weft2, *r.weft);
  RunSummary pt;
  pt.config = "cuda_graph";
  record_run("pytorch", graph, pt);
  r.pytorch.push_back(pt);
  EXPECT_EQ(r.weft->median_ms(), 6.0);
  EXPECT_EQ(r.weft->device_peak_bytes, 283115520);
  EXPECT_TRUE(first_losses_agree(*r.weft->first_loss, *pt.first_loss));

  std::string table = format_table({r});
  EXPECT_NE(table.find("| weft device | PyTorch device |"), std::string::npos) << table;
  EXPECT_NE(table.find("|   270.0 MiB |      243.0 MiB |"), std::string::npos) << table;
  EXPECT_EQ(table.find("1 or 2 threads"), std::string::npos) << table;  // the CPU's legend
  EXPECT_NE(table.find("cuda_graph"), std::string::npos) << table;
  EXPECT_NE(table.find("0.90×"), std::string::npos) << table;  // 6.0 / 6.7
  EXPECT_NE(table.find("torch.cuda.max_memory_allocated()"), std::string::npos) << table;
  // The CPU table keeps its columns.
  EXPECT_EQ(format_table({sample(true)}).find("weft device"), std::string::npos);

  nlohmann::json m = nlohmann::json::parse(results_json({r}, "paper", "aot", 20, 3, 2, "cuda", "bf16"))[0];
  EXPECT_EQ(m["device"], "cuda");
  EXPECT_EQ(m["precision"], "bf16");
  EXPECT_EQ(m["weft_device_peak_bytes"], 283115520);
  EXPECT_EQ(m["pytorch_device_peak_bytes"], 254803968);
  EXPECT_EQ(m["pytorch_config"], "cuda_graph");
  EXPECT_EQ(m["weft"]["device_peak_bytes"], 283115520);

  EXPECT_EQ(m["fuse_attention"], false);

  // --fuse-attention=both: a second row of the same model, against the same PyTorch runs.
  ModelResult fused = r;
  fused.fuse_attention = true;
  fused.weft->round_median_ms = {5.36};
  const std::string ab = format_table({r, fused});
  EXPECT_NE(ab.find("| mlp" + std::string(19, ' ') + "|"), std::string::npos) << ab;
  EXPECT_NE(ab.find("| mlp (fused attention) |"), std::string::npos) << ab;
  EXPECT_NE(ab.find("0.80×"), std::string::npos) << ab;  // 5.36 / 6.7
  EXPECT_NE(format_checks({fused}).find("mlp (fused attention): params weft 1,181,952"), std::string::npos);
  nlohmann::json list = nlohmann::json::parse(results_json({r, fused}, "paper", "aot", 20, 3, 2, "cuda"));
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1]["model"], "mlp");
  EXPECT_EQ(list[1]["fuse_attention"], true);
  EXPECT_EQ(list[1]["pytorch_config"], "cuda_graph");

  // A result without a median is the worker's fault, named.
  RunSummary bad;
  try {
    record_run("weft_aot_cuda_worker for mlp", nlohmann::json{{"first_loss", 1.0}}, bad);
    ADD_FAILURE() << "no SuiteError";
  } catch (const SuiteError& e) {
    EXPECT_EQ(e.message, "weft_aot_cuda_worker for mlp: its result has no \"median_ms\": "
                         "{\"first_loss\":1.0}");
  }
}

}  // namespace
}  // namespace weft::bench
