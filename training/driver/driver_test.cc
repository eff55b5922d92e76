// The training driver end to end, run as a user runs a training binary: jit_model_train is
// //training/driver:main linked with a make_compiled_model over the JIT Trainer
// (testing/jit_model.cc). Printed lines, the metrics CSV, an exact resume, the .npy data
// path, pinned errors with their exit statuses, and --help.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "formats/npy.h"
#include "formats/safetensors.h"
#include "tests/testing/subprocess.h"

namespace {

using weft::testing::CommandResult;

const std::string kBinary = "training/driver/jit_model_train";

CommandResult train(const std::string& flags, const std::string& model = "fashion") {
  return weft::testing::run_command("WEFT_DRIVER_TEST_MODEL=" + model + " " + kBinary + " " + flags);
}

std::string tmp(const std::string& name) { return weft::testing::test_tmpdir() + "/" + name; }

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

int count(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  return static_cast<int>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

TEST(Driver, TrainsEvaluatesAndWritesMetrics) {
  const std::string csv = tmp("metrics.csv"), ck = tmp("ck.safetensors");
  CommandResult r = train("--epochs=2 --max-steps=40 --eval-every=25 --log-every=20 --metrics-csv=" + csv +
                          " --checkpoint-out=" + ck + " --report=" + tmp("report.html"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("training on 60000 samples (/usr/share/datasets/fashion-mnist/train-*), batch 32, 40 "
                       "steps per epoch, 2 epochs (80 steps); ConstantLR(lr=0.001); 10000 test samples "
                       "(eval batch 768)\n"),
            std::string::npos)
      << r.out;
  // Not a terminal: a plain progress line every --log-every steps.
  EXPECT_EQ(count(r.out, "step (20|40|60|80)/80  epoch [12]/2  loss [0-9.]+  lr 0.001  [0-9.]+ steps/s  ETA "
                         "[0-9]+:[0-9]{2}\n"),
            4)
      << r.out;
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  EXPECT_EQ(count(r.out, "step (25|50|75) \\(epoch [12]/2\\): test accuracy: 0\\.[0-9]{4}, test cross-entropy: "
                         "[0-9.]+\n"),
            3)
      << r.out;
  std::smatch last;
  std::regex epoch_line("epoch 2/2: mean loss [0-9.]+, [0-9.]+ s, test accuracy: (0\\.[0-9]{4}), test "
                        "cross-entropy: [0-9.]+\n");
  ASSERT_TRUE(std::regex_search(r.out, last, epoch_line)) << r.out;
  EXPECT_EQ(count(r.out, "epoch 1/2: mean loss [0-9.]+, [0-9.]+ s, test accuracy: 0\\.[0-9]{4}"), 1) << r.out;
  EXPECT_GT(std::stod(last[1].str()), 0.65) << r.out;  // 80 Adam steps: far past chance (0.1)
  EXPECT_NE(r.out.find("checkpoint: " + ck + " (step 80)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("report: " + tmp("report.html") + "\n"), std::string::npos) << r.out;
  std::ifstream report(tmp("report.html"));
  std::string html((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<title>jit_model_train: training report</title>"), std::string::npos);
  EXPECT_EQ(count(html, "<svg class=\"chart\""), 6);

  std::vector<std::vector<std::string>> rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 81u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"epoch", "step", "loss", "lr", "examples_per_s", "elapsed_s",
                                                "rss_mib", "test_accuracy", "test_loss"}));
  for (int step = 1; step <= 80; ++step) {
    const std::vector<std::string>& row = rows[step];
    ASSERT_EQ(row.size(), 9u) << step;
    EXPECT_EQ(row[0], step <= 40 ? "1" : "2");
    EXPECT_EQ(row[1], std::to_string(step));
    EXPECT_TRUE(std::isfinite(std::stod(row[2])));
    EXPECT_EQ(row[3], "0.001");
    EXPECT_GT(std::stod(row[4]), 0) << step;
    EXPECT_GE(std::stod(row[5]), step > 1 ? std::stod(rows[step - 1][5]) : 0.0);
    EXPECT_GT(std::stod(row[6]), 1) << step;
    const bool evaluated = step % 25 == 0 || step % 40 == 0;
    EXPECT_EQ(row[7].empty(), !evaluated) << step;
    EXPECT_EQ(row[8].empty(), !evaluated) << step;
  }
  EXPECT_NEAR(std::stod(rows[80][7]), std::stod(last[1].str()), 5e-5);
}

// --epoch-csv: one row per epoch, each the mean of that epoch's rows of --metrics-csv (loss,
// lr) and its end-of-epoch evaluation, as the epoch lines print them; a resumed run's rows
// are numbered from the epoch it resumes in.
TEST(Driver, WritesTheEpochCsv) {
  const std::string flags = " --max-steps=20 --schedule=exponential --lr-gamma=0.9 --eval-every=15";
  const std::string steps = tmp("steps.csv"), epochs = tmp("epochs.csv");
  CommandResult r = train("--epochs=2" + flags + " --metrics-csv=" + steps + " --epoch-csv=" + epochs +
                          " --checkpoint-out=" + tmp("epochs.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<std::vector<std::string>> rows = read_csv(epochs), per_step = read_csv(steps);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  ASSERT_EQ(per_step.size(), 41u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"epoch", "loss", "lr", "test_accuracy", "test_loss"}));
  for (int epoch = 1; epoch <= 2; ++epoch) {
    const std::vector<std::string>& row = rows[epoch];
    ASSERT_EQ(row.size(), 5u);
    EXPECT_EQ(row[0], std::to_string(epoch));
    double loss = 0, lr = 0;
    for (int step = (epoch - 1) * 20 + 1; step <= epoch * 20; ++step) {
      loss += std::stod(per_step[step][2]);
      lr += std::stod(per_step[step][3]);
    }
    EXPECT_NEAR(std::stod(row[1]), loss / 20, 1e-6) << epoch;
    EXPECT_NEAR(std::stod(row[2]), lr / 20, 1e-9) << epoch;
    // The epoch's evaluation (not the one at step 15), as printed and in the step CSV.
    EXPECT_EQ(row[3], per_step[epoch * 20][7]);
    EXPECT_EQ(row[4], per_step[epoch * 20][8]);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.out, m, std::regex("epoch " + std::to_string(epoch) +
                                                       "/2: mean loss ([0-9.]+), [0-9.]+ s, test accuracy: "
                                                       "([0-9.]+), test cross-entropy: ([0-9.]+)\n")))
        << r.out;
    EXPECT_NEAR(std::stod(row[1]), std::stod(m[1].str()), 5e-5) << epoch;
    EXPECT_NEAR(std::stod(row[3]), std::stod(m[2].str()), 5e-5) << epoch;
    EXPECT_NEAR(std::stod(row[4]), std::stod(m[3].str()), 5e-5) << epoch;
  }
  r = train("--epochs=3" + flags + " --checkpoint-in=" + tmp("epochs.safetensors") + " --epoch-csv=" + epochs);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  rows = read_csv(epochs);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_EQ(rows[1][0], "3");
}

// --serve: the dashboard's URL is printed and the run trains as without it (the page and
// its stream are tested in training/monitor: serve_test, serve_chromium_test).
TEST(Driver, ServesTheDashboard) {
  CommandResult r = train("--epochs=1 --max-steps=5 --serve=0 --checkpoint-out=" + tmp("served.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "dashboard: http://127\\.0\\.0\\.1:[0-9]+/\n"), 1) << r.out;
  // A port is 16 bits; the JIT examples give the same message (examples_test).
  for (const std::string port : {"70000", "65536"}) {
    r = train("--serve=" + port);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "error: --serve=" + port + ": must be in [0, 65535]\n");
  }
}

TEST(Driver, ResumesWhereAnUninterruptedRunWouldBe) {
  // A schedule of the step count alone, so the two halves agree with the whole on lr too.
  const std::string flags = " --max-steps=30 --seed=5 --shuffle-seed=3 --schedule=step --lr-step-size=20 "
                            "--lr-gamma=0.5 --lr=0.002";
  CommandResult full = train("--epochs=2" + flags + " --metrics-csv=" + tmp("full.csv"));
  ASSERT_EQ(full.exit_code, 0) << full.out;
  CommandResult first = train("--epochs=1" + flags + " --checkpoint-out=" + tmp("half.safetensors"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  CommandResult second = train("--epochs=2" + flags + " --checkpoint-in=" + tmp("half.safetensors") +
                               " --metrics-csv=" + tmp("second.csv") + " --checkpoint-out=" + tmp("end.safetensors"));
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find("resumed from " + tmp("half.safetensors") + " at step 30\n"), std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find("checkpoint: " + tmp("end.safetensors") + " (step 60)\n"), std::string::npos)
      << second.out;

  std::vector<std::vector<std::string>> whole = read_csv(tmp("full.csv")), tail = read_csv(tmp("second.csv"));
  ASSERT_EQ(whole.size(), 61u);
  ASSERT_EQ(tail.size(), 31u);
  for (int i = 1; i <= 30; ++i) {
    const std::vector<std::string>& a = whole[30 + i];
    const std::vector<std::string>& b = tail[i];
    EXPECT_EQ(b[0], a[0]);
    EXPECT_EQ(b[1], a[1]);  // the step count continues
    EXPECT_NEAR(std::stod(b[2]), std::stod(a[2]), 1e-6 * std::abs(std::stod(a[2]))) << "step " << a[1];
    EXPECT_EQ(b[3], a[3]);  // the learning rate of the same step
  }
  // Row k is step k, taken with lr_at(k - 1).
  EXPECT_EQ(whole[20][3], "0.002");
  EXPECT_EQ(whole[21][3], "0.001");
  EXPECT_EQ(whole[45][3], "0.0005");
  EXPECT_EQ(whole[60][7], tail[30][7]);  // the same test accuracy at the end

  // A finished run has nothing to train: it evaluates the checkpoint.
  CommandResult done = train("--epochs=2" + flags + " --checkpoint-in=" + tmp("end.safetensors"));
  ASSERT_EQ(done.exit_code, 0) << done.out;
  EXPECT_NE(done.out.find("nothing to train: the model is at step 60, the run ends at step 60\nstep 60: test "
                          "accuracy: " + whole[60][7].substr(0, 6)),
            std::string::npos)
      << done.out << whole[60][7];
}

/// Features and class labels (the argmax of the first three features) for the npy models.
void write_classification(const std::string& x, const std::string& y, int64_t n, uint32_t seed) {
  weft::Tensor xs(weft::Type{weft::DType::f64, {n, 4}});
  weft::Tensor ys(weft::Type{weft::DType::i32, {n}});
  uint32_t state = seed;
  for (int64_t i = 0; i < n; ++i) {
    double* r = xs.data<double>() + i * 4;
    for (int j = 0; j < 4; ++j) {
      state = state * 1664525u + 1013904223u;
      r[j] = static_cast<double>(state >> 8) / (1 << 24) - 0.5;
    }
    ys.data<int32_t>()[i] = r[0] >= r[1] && r[0] >= r[2] ? 0 : r[1] >= r[2] ? 1 : 2;
  }
  ASSERT_TRUE(weft::write_npy(x, xs).ok());
  ASSERT_TRUE(weft::write_npy(y, ys).ok());
}

TEST(Driver, NpyData) {
  write_classification(tmp("x.npy"), tmp("y.npy"), 200, 1);
  write_classification(tmp("tx.npy"), tmp("ty.npy"), 42, 2);  // eval batch 5: a short last batch
  CommandResult r = train("--epochs=6 --lr=1 --train=" + tmp("x.npy") + "," + tmp("y.npy") + " --test=" + tmp("tx.npy") +
                              "," + tmp("ty.npy") + " --schedule=cosine",
                          "npy-classifier");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("training on 200 samples (train), batch 8, 25 steps per epoch, 6 epochs (150 steps); "
                       "CosineAnnealingLR(base_lr=1.0, T_max=150, eta_min=0.0); 42 test samples (eval batch 5)"),
            std::string::npos)
      << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("epoch 6/6: .* test accuracy: (0\\.[0-9]{4})"))) << r.out;
  EXPECT_GT(std::stod(m[1].str()), 0.7) << r.out;  // a linear model of a linear rule; chance is 1/3

  // Regression: a float target, evaluated by mean squared error.
  weft::Tensor x(weft::Type{weft::DType::f32, {40, 3}}), y(weft::Type{weft::DType::f32, {40, 2}});
  for (int64_t i = 0; i < 40; ++i) {
    float* r3 = x.data<float>() + i * 3;
    for (int j = 0; j < 3; ++j) r3[j] = static_cast<float>((i * 7 + j * 3) % 11) / 11.0f;
    y.data<float>()[i * 2] = r3[0] + r3[1];
    y.data<float>()[i * 2 + 1] = r3[2] - r3[0];
  }
  ASSERT_TRUE(weft::write_npy(tmp("rx.npy"), x).ok());
  ASSERT_TRUE(weft::write_npy(tmp("ry.npy"), y).ok());
  const std::string data = " --train=" + tmp("rx.npy") + "," + tmp("ry.npy") + " --test=" + tmp("rx.npy") + "," +
                           tmp("ry.npy");
  r = train("--epochs=1" + data, "npy-regressor");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("epoch 1/1: .* test mse: ([0-9.]+)\n"))) << r.out;
  const double first_mse = std::stod(m[1].str());
  r = train("--epochs=30" + data, "npy-regressor");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("epoch 30/30: .* test mse: ([0-9.]+)\n"))) << r.out;
  EXPECT_LT(std::stod(m[1].str()), first_mse / 2) << r.out;
}

// Loss scaling (TrainOptions::loss_scale): the scale and the skipped count, read every
// --log-every steps and at the epoch's end, on the progress line and in --metrics-csv.
TEST(Driver, LossScaleOnTheProgressLineAndInTheMetricsCsv) {
  weft::Tensor x(weft::Type{weft::DType::f32, {40, 3}}), y(weft::Type{weft::DType::f32, {40, 2}});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) / 7.0f;
  for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = static_cast<float>(i % 5) / 5.0f;
  ASSERT_TRUE(weft::write_npy(tmp("sx.npy"), x).ok());
  ASSERT_TRUE(weft::write_npy(tmp("sy.npy"), y).ok());
  const std::string csv = tmp("scaled.csv");
  CommandResult r = train("--epochs=1 --log-every=2 --train=" + tmp("sx.npy") + "," + tmp("sy.npy") +
                              " --metrics-csv=" + csv,
                          "npy-regressor-scaled");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Three clean updates: ×2 after the third.
  EXPECT_EQ(count(r.out, "step 2/5 .*  loss scale 1024  skipped 0\n"), 1) << r.out;
  EXPECT_EQ(count(r.out, "step 4/5 .*  loss scale 2048  skipped 0\n"), 1) << r.out;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 6u);
  ASSERT_GE(rows[0].size(), 2u);
  EXPECT_EQ(rows[0][rows[0].size() - 2], "loss_scale");
  EXPECT_EQ(rows[0].back(), "skipped_steps");
  const size_t scale = rows[0].size() - 2;
  EXPECT_EQ(rows[2][scale], "1024");  // step 2
  EXPECT_EQ(rows[3][scale], "");      // step 3: not read
  EXPECT_EQ(rows[4][scale], "2048");
  EXPECT_EQ(rows[5][scale], "2048");  // the epoch's end
  EXPECT_EQ(rows[5].back(), "0");
}

TEST(Driver, NchwImages) {
  CommandResult r = train("--max-steps=3", "nchw");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(count(r.out, "epoch 1/1: mean loss [0-9.]+, [0-9.]+ s, test accuracy: 0\\.[0-9]{4}"), 1) << r.out;
}

TEST(Driver, CheckNumericsAndProfile) {
  // Adam at lr 1e30 overflows the next step's forward pass: the error names the op and
  // its builder call site in the model's source.
  CommandResult r = train("--max-steps=5 --lr=1e30 --check-numerics");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("training/driver/testing/jit_model.cc:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": error: check-numerics: "), std::string::npos) << r.out;
  r = train("--max-steps=3 --profile");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("3 steps, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GFLOP/s   GB/s"), std::string::npos) << r.out;
  r = train("--profile=yes");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--profile takes no value"), std::string::npos) << r.out;
}

TEST(Driver, ErrorsAndExitStatuses) {
  // The command line: status 2, one line.
  CommandResult r = train("--data-parallel --max-steps=1");  // not under a launcher
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("error: --data-parallel: data parallelism needs a launcher, and none started this "
                        "process. Under MPI: `mpirun -np N PROGRAM --data-parallel`", 0), 0u)
      << r.out;  // the rest: runtime/collective/world_test.cc
  r = train("--epochs=x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: --epochs=x: not a whole number\n");
  r = train("--bogus=1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: unknown flag '--bogus' (--help lists the flags)\n");
  r = train("--schedule=cosine --lr-gamma=0.5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: --lr-gamma applies to --schedule=step, multistep or exponential, not --schedule=cosine\n");
  // Flags that each pass can make a rate the step refuses: the error names the schedule
  // and the step (set_lr's message alone did not say where the infinity came from).
  r = train("--max-steps=3 --schedule=exponential --lr-gamma=1e308");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("error: ExponentialLR(base_lr=0.001, gamma=1e+308) at step 3: set_lr(inf): the "
                       "learning rate must be finite (a step with it makes every weight NaN)\n"),
            std::string::npos)
      << r.out;
  write_classification(tmp("x.npy"), tmp("y.npy"), 20, 1);
  r = train("--train=" + tmp("x.npy") + "," + tmp("y.npy") + "," + tmp("y.npy"), "npy-classifier");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: --train gives 3 arrays; the model's step takes 2 (the inputs, then the target): "
                   "'x' f32[8,4], 'target' i64[8]\n");

  // Files: status 1, one line naming the file.
  r = train("--data=/nonexistent");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "/nonexistent/train-images-idx3-ubyte.gz: error: Fashion-MNIST file not found (No such file "
                   "or directory); install the Debian package dataset-fashion-mnist (tools/setup does), or "
                   "set --data to the directory that holds the four .gz files\n");
  r = train("--checkpoint-in=" + tmp("absent.safetensors"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, tmp("absent.safetensors") + ": error: cannot open for reading: No such file or directory\n");
  {
    std::ofstream(tmp("garbage.safetensors")) << "garbage\n";
    std::ofstream(tmp("garbage.npy")) << "garbage\n";
  }
  r = train("--checkpoint-in=" + tmp("garbage.safetensors"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind(tmp("garbage.safetensors") + ": error: header length ", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = train("--train=" + tmp("garbage.npy") + "," + tmp("y.npy"), "npy-classifier");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, tmp("garbage.npy") + ": error: not a .npy file: bad magic string (expected \\x93NUMPY)\n");
  r = train("--train=" + tmp("x.npy") + "," + tmp("y.npy"), "nchw");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, tmp("x.npy") + ": error: samples of shape [4] (4 elements) do not fit the model's input 'x' "
                                  "f32[32,1,28,28] (784 elements per sample)\n");
  r = train("--metrics-csv=/nonexistent/m.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: --metrics-csv=/nonexistent/m.csv: the directory /nonexistent does not exist\n");
  // A checkpoint of another model.
  write_classification(tmp("x.npy"), tmp("y.npy"), 16, 1);
  r = train("--train=" + tmp("x.npy") + "," + tmp("y.npy") + " --checkpoint-out=" + tmp("small.safetensors"),
            "npy-classifier");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = train("--checkpoint-in=" + tmp("small.safetensors"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind(tmp("small.safetensors") + ": error: ", 0), 0u) << r.out;
}

/// The flags of the npy-classifier's data (16 samples: 2 steps an epoch).
std::string classifier_data() {
  write_classification(tmp("x.npy"), tmp("y.npy"), 16, 1);
  return "--train=" + tmp("x.npy") + "," + tmp("y.npy");
}

/// The npy-classifier's checkpoint after one epoch, written at `ck` and read back less its
/// checksums, for a test to damage and write again (write_safetensors adds new ones).
void classifier_checkpoint(const std::string& ck, weft::SafetensorsFile* file) {
  CommandResult r = train(classifier_data() + " --checkpoint-out=" + ck, "npy-classifier");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  weft::StatusOr<weft::SafetensorsFile> read = weft::read_safetensors(ck);
  ASSERT_TRUE(read.ok()) << read.error().to_string();
  *file = std::move(*read);
  file->metadata.erase(std::string(weft::kSafetensorsChecksumKey));
  file->metadata.erase(std::string(weft::kSafetensorsMetadataChecksumKey));
}

// A checkpoint's metadata is validated on resume: a negative weft.step used to load and
// then abort the driver on an internal check (epoch_order, data.cc).
TEST(Driver, ResumeRefusesANegativeStep) {
  const std::string ck = tmp("negative.safetensors");
  weft::SafetensorsFile file;
  ASSERT_NO_FATAL_FAILURE(classifier_checkpoint(ck, &file));
  file.metadata["weft.step"] = "-5";
  ASSERT_TRUE(weft::write_safetensors(ck, file.tensors, file.metadata).ok());
  CommandResult r = train(classifier_data() + " --checkpoint-in=" + ck, "npy-classifier");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, ck + ": error: malformed checkpoint: weft.step is '-5', not a non-negative integer\n");
}

// --max-memory, as weftc's: the model's step (its planned arena and its inputs) is checked
// against it when the model is made, before anything is allocated or any data is read.
TEST(Driver, MaxMemoryRefusesALargerStep) {
  CommandResult r = train("--max-memory=1K --max-steps=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: program @model needs 507.7 KiB (arena 109.3 KiB + inputs 398.4 KiB) but only 1.0 KiB "
                   "are available (the memory limit); largest buffers: %x f32[32,784] (input) 98.0 KiB, "
                   "%0.weight f32[32,784] (input) 98.0 KiB, %optimizer.0.weight.exp_avg f32[32,784] (input) "
                   "98.0 KiB; raise the limit (--max-memory, max_memory) or use a smaller batch\n");
  for (const char* bad : {"lots", "0", "5T", "-1K"}) {
    r = train(std::string("--max-memory=") + bad);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "error: --max-memory=" + std::string(bad) +
                         ": not a positive number of bytes (suffixes K, M, G)\n");
  }
  r = train("--max-memory=1G --max-steps=1 --log-every=1000");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// Resuming is strict: a checkpoint lacking a tensor or holding an unexpected one is
// refused, both listed (it used to print "resumed ... at step N" and train from fresh
// values); --partial-load loads what matches and prints what did not.
TEST(Driver, ResumeIsStrictUnlessPartialLoadIsAskedFor) {
  const std::string ck = tmp("strict.safetensors");
  weft::SafetensorsFile file;
  ASSERT_NO_FATAL_FAILURE(classifier_checkpoint(ck, &file));
  const std::string dropped = file.tensors[0].first;
  const size_t kept = file.tensors.size() - 1;
  file.tensors[0].first = "extra.counter";
  ASSERT_TRUE(weft::write_safetensors(ck, file.tensors, file.metadata).ok());
  const std::string data = classifier_data();
  CommandResult r = train(data + " --epochs=2 --checkpoint-in=" + ck, "npy-classifier");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, ck + ": error: strict load: the checkpoint lacks 1 expected key(s): " + dropped +
                       "; it holds 1 unexpected key(s): extra.counter; nothing was loaded (a partial load "
                       "loads the keys that match and reports the rest)\n");
  r = train(data + " --epochs=2 --partial-load --checkpoint-in=" + ck, "npy-classifier");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("partial load of " + ck + ": loaded " + std::to_string(kept) +
                            " key(s); missing (left as they were): " + dropped +
                            "; unexpected (ignored): extra.counter\nresumed from " + ck + " at step 2\n",
                        0),
            0u)
      << r.out;
  r = train(data + " --partial-load", "npy-classifier");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: --partial-load needs --checkpoint-in\n");
}

// Every output path is checked before the first step: a directory given as
// --checkpoint-out (or --report) used to be found only when the run ended.
TEST(Driver, OutputPathsAreCheckedBeforeTheFirstStep) {
  const std::string dir = tmp("a_directory");
  ::mkdir(dir.c_str(), 0755);
  for (const std::string flag : {"checkpoint-out", "report", "metrics-csv", "epoch-csv"}) {
    CommandResult r = train("--max-steps=2 --" + flag + "=" + dir);
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_EQ(r.out, "error: --" + flag + "=" + dir + ": that is a directory; name a file\n");
    r = train("--max-steps=2 --" + flag + "=" + tmp("absent/file"));
    EXPECT_EQ(r.exit_code, 1) << flag;
    EXPECT_EQ(r.out, "error: --" + flag + "=" + tmp("absent/file") + ": the directory " + tmp("absent") +
                         " does not exist\n");
  }
  // Two outputs naming one file: the later one was written over the earlier at the end
  // (--export-onnx over --checkpoint-out lost the checkpoint).
  const std::string same = tmp("same_file");
  CommandResult r = train("--max-steps=2 --checkpoint-out=" + same + " --report=" + tmp(".") + "/same_file");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: --checkpoint-out and --report both name " + tmp(".") +
                       "/same_file; give each output its own file\n");
  EXPECT_FALSE(std::filesystem::exists(same));
}

// Started by a launcher without --data-parallel (`mpirun -np 2 PROGRAM`): each process ran
// the whole training alone and wrote the same files, silently. It still may; it says so.
TEST(Driver, ALaunchOfSeveralProcessesWithoutDataParallelWarns) {
  CommandResult r = weft::testing::run_command("RANK=0 WORLD_SIZE=2 WEFT_DRIVER_TEST_MODEL=fashion " + kBinary +
                                               " --max-steps=1 --epochs=1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("warning: a launcher started 2 processes, but without --data-parallel each trains alone on "
                        "all the data and writes the same files; add --data-parallel to train as one\n",
                        0),
            0u)
      << r.out;
  r = train("--max-steps=1 --epochs=1");
  EXPECT_EQ(r.out.find("warning: a launcher"), std::string::npos) << r.out;
}

TEST(Driver, StopsOnSigtermWithACheckpoint) {
  // A preempted job: SIGTERM once training is under way; the run finishes its step,
  // writes the checkpoint, says how to resume and exits 128 + 15.
  const std::string out = tmp("sigterm.out"), ck = tmp("sigterm.safetensors");
  CommandResult r = weft::testing::run_command(
      "WEFT_DRIVER_TEST_MODEL=fashion " + kBinary + " --epochs=50 --log-every=20 --checkpoint-out=" + ck + " >" +
      out + " 2>&1 & pid=$!; n=0; while ! grep -q '^step 20/' " + out +
      " && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done; kill -TERM $pid; wait $pid; echo \"exit $?\"; cat " + out);
  ASSERT_NE(r.out.find("exit 143\n"), std::string::npos) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("checkpoint: " + ck + " \\(step ([0-9]+)\\)\n"
                                                     "error: interrupted by SIGTERM at step ([0-9]+); resume with "
                                                     "--checkpoint-in=" + ck + "\n")))
      << r.out;
  EXPECT_EQ(m[1].str(), m[2].str());
  CommandResult resumed = train("--epochs=50 --max-steps=1 --checkpoint-in=" + ck);
  EXPECT_NE(resumed.out.find("resumed from " + ck + " at step " + m[1].str() + "\n"), std::string::npos)
      << resumed.out;
}

TEST(Driver, HelpListsEveryFlag) {
  CommandResult r = train("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("usage: jit_model_train [--flag=value ...]\n", 0), 0u) << r.out;
  for (const char* flag :
       {"--data=DIR", "--train=X.npy,Y.npy", "--test=X.npy,Y.npy", "--epochs=N", "--max-steps=N", "--seed=S",
        "--shuffle-seed=S", "--threads=N", "--max-memory=BYTES", "--tf32", "--lr=X", "--schedule=NAME", "--lr-step-size=N", "--lr-gamma=X",
        "--milestones=N,N,...", "--warmup-steps=N", "--warmup-start-factor=X", "--min-lr=X", "--pct-start=X",
        "--div-factor=X", "--final-div-factor=X", "--max-lr=X", "--step-size-up=N", "--step-size-down=N",
        "--cyclic-mode=MODE", "--cyclic-gamma=X", "--base-momentum=X", "--max-momentum=X", "--no-cycle-momentum", "--checkpoint-in=PATH", "--partial-load", "--checkpoint-out=PATH",
        "--checkpoint-every=N", "--export-onnx=PATH", "--eval-every=N", "--metrics-csv=PATH", "--epoch-csv=PATH", "--report=PATH", "--serve=N", "--log-every=N",
        "--check-numerics",
        "--profile", "--data-parallel", "--collective-timeout=N", "--bucket-mb=F", "--first-bucket-mb=F",
        "--help"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + flag), std::string::npos) << flag;
  }
  EXPECT_EQ(count(r.out, "\\(default: "), 47);  // every flag but --help
}

// A binary trains on the backend its model was compiled for: --backend naming it is a
// no-op, naming another a usage error (cuda binaries: examples/fashion_mnist:cuda_binaries_test).
TEST(Driver, BackendFlagNamesTheCompiledBackend) {
  CommandResult help = train("--help --backend=cpu");
  EXPECT_EQ(help.exit_code, 0) << help.out;
  EXPECT_NE(help.out.find("\nThis binary's model was compiled for the cpu backend (weft_binary's "
                          "`backend`); --backend=cpu is accepted, any other is an error.\n"),
            std::string::npos)
      << help.out;
  CommandResult r = train("--backend cuda --max-steps=1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: --backend=cuda: this binary's model was compiled for cpu, and a binary "
                   "trains on the backend it was built for; build one with backend = \"cuda\" "
                   "(weft_binary, tools/aot/weft.bzl)\n");
}

// A binary trains at the precision its model was compiled for (weft_binary's `precision`):
// --precision naming it is a no-op, naming another a usage error naming both.
TEST(Driver, PrecisionFlagIsTheCompiledOnes) {
  CommandResult r = train("--precision=bf16 --max-steps=1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "error: --precision=bf16: this binary's model was compiled for f32 training, and a "
                   "binary trains at the precision it was built for; build one with precision = \"bf16\" "
                   "(weft_binary, tools/aot/weft.bzl)\n");
  CommandResult help = train("--help");
  EXPECT_NE(help.out.find("\nIt trains in f32 (weft_binary's `precision`); --precision=f32 is accepted, "
                          "any other is an error.\n"),
            std::string::npos)
      << help.out;
}

// A "binary" built for bf16 ($WEFT_DRIVER_TEST_PRECISION: the Trainer at that precision,
// what a weft_binary with precision = "bf16" links): it trains at bf16 without the flag and
// with --precision=bf16, says so on its first line and in --help, and refuses f32.
CommandResult train_bf16(const std::string& flags) {
  return weft::testing::run_command("WEFT_DRIVER_TEST_PRECISION=bf16 WEFT_DRIVER_TEST_MODEL=fashion " +
                                    kBinary + " " + flags);
}

TEST(Driver, Bf16BinaryTrainsAtItsPrecisionOnly) {
  CommandResult help = train_bf16("--help");
  EXPECT_EQ(help.exit_code, 0) << help.out;
  EXPECT_NE(help.out.find("\nIt trains in bf16 (weft_binary's `precision`); --precision=bf16 is accepted, "
                          "any other is an error.\n"),
            std::string::npos)
      << help.out;
  for (const char* flags : {"--max-steps=2", "--precision=bf16 --max-steps=2"}) {
    CommandResult r = train_bf16(flags);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("training on 60000 samples (/usr/share/datasets/fashion-mnist/train-*), batch 32, "
                         "mixed precision bf16, 2 steps per epoch, "),
              std::string::npos)
        << r.out;
  }
  CommandResult f32 = train_bf16("--precision f32 --max-steps=1");
  EXPECT_EQ(f32.exit_code, 2);
  EXPECT_EQ(f32.out, "error: --precision=f32: this binary's model was compiled for bf16 training, and a "
                     "binary trains at the precision it was built for; build one with precision = \"f32\" "
                     "(weft_binary, tools/aot/weft.bzl)\n");
}

}  // namespace
