// The Fashion-MNIST examples end to end, on a few steps per epoch of a slice of the data
// (small_data): they train, report test accuracy every epoch, write a checkpoint, and
// resume from it exactly.
#include <gtest/gtest.h>

#include "tests/testing/mpi_run.h"
#include "tests/testing/subprocess.h"
#include <sys/wait.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace {

using Result = weft::testing::CommandResult;

Result run(const std::string& cmd) { return weft::testing::run_command(cmd); }

std::string tmp(const std::string& name) {
  return weft::testing::test_tmpdir() + "/" + name;
}

constexpr int kTrainExamples = 4096;  // 32 batches of 128: every run below takes at most 30
constexpr int kTestExamples = 1000;   // one evaluation batch

/// " --data=DIR": the first kTrainExamples training and kTestExamples test examples of
/// Fashion-MNIST as IDX files, written once per process. The cases below check what the
/// examples do (train, evaluate, checkpoint, resume, halt, refuse), for which 30 steps and
/// a test set of 1,000 do as well as the full 60,000 and 10,000, at a third of the CPU
/// time (decompressing the full set, and evaluating 10,000 images every epoch, was most
/// of each run's). bf16_accuracy_test and the training driver's tests read the full set.
const std::string& small_data() {
  static const std::string flag = [] {
    const std::string dir = tmp("fashion_mnist_small");
    EXPECT_EQ(run("mkdir -p " + dir).exit_code, 0);
    // IDX: a big-endian magic number (0x0803 images, 0x0801 labels), the count, the
    // image dims, then one byte per pixel or label.
    auto write = [&](const std::string& name, uint32_t magic, uint32_t count, int item_bytes) {
      std::vector<uint32_t> header = {magic, count};
      if (magic == 0x0803) header.insert(header.end(), {28, 28});
      std::ofstream out(dir + "/" + name, std::ios::binary);
      for (uint32_t v : header) {
        const char bytes[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
        out.write(bytes, 4);
      }
      out.close();
      const std::string skip = std::to_string(4 * header.size() + 1), keep = std::to_string(count * item_bytes);
      Result r = run("zcat /usr/share/datasets/fashion-mnist/" + name + ".gz | tail -c +" + skip + " | head -c " +
                     keep + " >> " + dir + "/" + name + " && gzip -1 -f " + dir + "/" + name);
      EXPECT_EQ(r.exit_code, 0) << r.out;
    };
    write("train-images-idx3-ubyte", 0x0803, kTrainExamples, 28 * 28);
    write("train-labels-idx1-ubyte", 0x0801, kTrainExamples, 1);
    write("t10k-images-idx3-ubyte", 0x0803, kTestExamples, 28 * 28);
    write("t10k-labels-idx1-ubyte", 0x0801, kTestExamples, 1);
    return " --data=" + dir;
  }();
  return flag;
}

/// "mean loss X ... test accuracy: Y" of every epoch line (the time varies, these must not).
std::vector<std::string> epoch_results(const std::string& out) {
  std::vector<std::string> results;
  std::regex line("epoch (\\d+)/\\d+: mean loss ([0-9.]+), .* test accuracy: (0\\.\\d{4})");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
    results.push_back((*it)[1].str() + " " + (*it)[2].str() + " " + (*it)[3].str());
  }
  return results;
}

TEST(FashionMnist, MlpTrainsReportsAccuracyAndResumesExactly) {
  const std::string flags = " --max-steps=30 --seed=5" + small_data();
  Result full = run("examples/fashion_mnist/mlp --epochs=3" + flags +
                    " --checkpoint-out=" + tmp("full.safetensors"));
  ASSERT_EQ(full.exit_code, 0) << full.out;
  std::vector<std::string> all = epoch_results(full.out);
  ASSERT_EQ(all.size(), 3u) << full.out;
  // After 90 Adam steps the MLP is well past chance (0.1).
  double accuracy = std::stod(all.back().substr(all.back().rfind(' ') + 1));
  EXPECT_GT(accuracy, 0.7) << full.out;
  EXPECT_NE(full.out.find("checkpoint: " + tmp("full.safetensors") + " (step 90)"), std::string::npos);

  Result first = run("examples/fashion_mnist/mlp --epochs=2" + flags +
                     " --checkpoint-out=" + tmp("two.safetensors"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  Result resumed = run("examples/fashion_mnist/mlp --epochs=3" + flags + " --resume=" +
                       tmp("two.safetensors") + " --checkpoint-out=" + tmp("three.safetensors"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("at step 60"), std::string::npos) << resumed.out;
  std::vector<std::string> tail = epoch_results(resumed.out);
  ASSERT_EQ(tail.size(), 1u) << resumed.out;
  EXPECT_EQ(tail[0], all[2]);  // the uninterrupted run's third epoch, to the printed digit
}

// --data-parallel under `mpirun -np 2`: each rank trains on 64 rows of every 128-row
// batch (the training driver's line says so); the epoch's mean loss and test accuracy are
// one process's, to the printed digit.
TEST(FashionMnist, MlpDataParallelOverTwoRanksMatchesOneProcess) {
  const std::string flags = " --epochs=1 --max-steps=30 --seed=5" + small_data();
  Result one = run("examples/fashion_mnist/mlp" + flags + " --checkpoint-out=" +
                   tmp("one.safetensors"));
  ASSERT_EQ(one.exit_code, 0) << one.out;
  Result two = weft::testing::run_mpi(weft::testing::kMpirun +
                                     "examples/fashion_mnist/mlp --data-parallel" + flags +
                                     " --checkpoint-out=" + tmp("two.safetensors"));
  ASSERT_EQ(two.exit_code, 0) << two.out;
  EXPECT_NE(two.out.find(", batch 128 (2 ranks x 64), 30 steps per epoch"), std::string::npos) << two.out;
  const std::vector<std::string> a = epoch_results(one.out), b = epoch_results(two.out);
  ASSERT_EQ(a.size(), 1u) << one.out;
  EXPECT_EQ(b, a) << two.out;  // rank 0 alone prints: one epoch line
  EXPECT_NE(two.out.find("checkpoint: " + tmp("two.safetensors") + " (step 30)"),
            std::string::npos) << two.out;
}

TEST(FashionMnist, MetricsCsvAndReport) {
  Result r = run("examples/fashion_mnist/mlp --epochs=2 --max-steps=5" + small_data() + " --metrics-csv=" +
                 tmp("m.csv") + " --report=" + tmp("r.html") + " --checkpoint-out=" + tmp("m.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream csv(tmp("m.csv"));
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header, "epoch,step,loss,lr,examples_per_s,elapsed_s,rss_mib,test_accuracy,test_loss");
  int rows = 0, with_accuracy = 0;
  while (std::getline(csv, line)) {
    ++rows;
    if (line.back() != ',') ++with_accuracy;
  }
  EXPECT_EQ(rows, 10);
  EXPECT_EQ(with_accuracy, 2);  // once per epoch
  std::ifstream report(tmp("r.html"));
  std::string html((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<title>mlp: training report</title>"), std::string::npos);
  EXPECT_NE(r.out.find("report: " + tmp("r.html")), std::string::npos) << r.out;
}

// The ponder example: trains, then counts the iterations each test image ran (halting
// per image, at most 6), and prints their mean and histogram.
TEST(FashionMnist, PonderHaltsPerImageAndPrintsTheHistogram) {
  Result r = run("examples/fashion_mnist/ponder --epochs=1 --max-steps=30" + small_data() + " --checkpoint-out=" +
                 tmp("ponder.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(epoch_results(r.out).size(), 1u) << r.out;
  std::smatch mean;
  ASSERT_TRUE(std::regex_search(r.out, mean, std::regex("iterations per test image \\(max 6\\): mean ([0-9.]+)")))
      << r.out;
  const double m = std::stod(mean[1].str());
  EXPECT_GE(m, 1.0);
  EXPECT_LE(m, 6.0);
  // Six rows whose counts add up to the test images.
  std::regex row("\\n  ([1-6]): +(\\d+) images");
  int64_t images = 0, rows = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), row); it != std::sregex_iterator(); ++it) {
    images += std::stoll((*it)[2].str());
    ++rows;
  }
  EXPECT_EQ(rows, 6);
  EXPECT_EQ(images, kTestExamples);
}

TEST(FashionMnist, CnnWithBatchNormRuns) {
  Result r = run("examples/fashion_mnist/cnn --bn --epochs=1 --max-steps=3" + small_data() + " --checkpoint-out=" +
                 tmp("cnn.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(epoch_results(r.out).size(), 1u) << r.out;
  // Resuming with another --batch (the checkpoint's model was built for 128): the same
  // architecture, though batch norm's constants differ with the batch size.
  const std::string ck = tmp("cnn.safetensors");
  r = run("examples/fashion_mnist/cnn --bn --epochs=1 --max-steps=1 --batch=16" + small_data() + " --checkpoint-in=" +
          ck + " --checkpoint-out=" + tmp("cnn16.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("resumed from " + ck + " at step 3\n"), std::string::npos) << r.out;
  // Without --bn it is another architecture: refused, naming the first difference and the
  // command-line remedy.
  r = run("examples/fashion_mnist/cnn --epochs=1 --max-steps=1 --batch=16" + small_data() + " --checkpoint-in=" + ck);
  EXPECT_EQ(r.exit_code, 1);
  const std::string refusal =
      ck + ": error: checkpoint is of a different architecture: the checkpoint's model has "
           "`%3 = mean(%2) {axes=[0, 2, 3], keepdims=true} : f32[1,32,1,1]` where this model has "
           "`%3 = relu(%2) : f32[16,32,28,28]` at examples/fashion_mnist/cnn_model.cc:";
  EXPECT_EQ(r.out.substr(0, refusal.size()), refusal) << r.out;
  const std::string hint =
      "(Flow(3 steps) > ReLU); nothing was loaded: on the command line, resume with the model and options the "
      "checkpoint was saved with; in C++, to load only a labelled subgraph both models "
      "share, set LoadOptions::subgraph\n";
  EXPECT_NE(r.out.find(hint), std::string::npos) << r.out;
}

// --precision=bf16: the step's matmuls in bf16 (TrainOptions::precision); it trains and
// checkpoints f32 parameters.
TEST(FashionMnist, MixedPrecisionRuns) {
  Result r = run("examples/fashion_mnist/mlp --precision=bf16 --epochs=1 --max-steps=5" + small_data() +
                 " --checkpoint-out=" + tmp("mlp_bf16.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(epoch_results(r.out).size(), 1u) << r.out;
}

// --tf32 is a cuda option (TrainOptions::bind.tf32): the cpu ignores it, training the same
// losses to the printed digit.
TEST(FashionMnist, Tf32IsIgnoredOnTheCpu) {
  const std::string flags =
      "examples/fashion_mnist/mlp --epochs=1 --max-steps=5 --seed=3" + small_data() + " --checkpoint-out=";
  Result off = run(flags + tmp("mlp_f32.safetensors"));
  Result tf32 = run(flags + tmp("mlp_tf32.safetensors") + " --tf32");
  ASSERT_EQ(off.exit_code, 0) << off.out;
  ASSERT_EQ(tf32.exit_code, 0) << tf32.out;
  ASSERT_EQ(epoch_results(off.out).size(), 1u) << off.out;
  EXPECT_EQ(epoch_results(tf32.out), epoch_results(off.out));
}

// A learning rate of 1e30 makes Adam's first update enormous; --check-numerics stops the
// next step at the first op that overflows and names its builder call site in mlp.cc.
TEST(FashionMnist, CheckNumericsStopsAtTheFirstOverflow) {
  Result r = run("examples/fashion_mnist/mlp --lr=1e30 --epochs=1 --max-steps=5 --check-numerics" + small_data());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("error: check-numerics: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("examples/fashion_mnist/mlp.cc:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" produced "), std::string::npos) << r.out;
}

TEST(FashionMnist, Errors) {
  Result r = run("examples/fashion_mnist/mlp --data=/nonexistent");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("dataset-fashion-mnist (tools/setup does), or set --data to the directory"),
            std::string::npos)
      << r.out;
  // A bad command line is one error line and exit status 2, worded as the training
  // binaries' (training/driver/flags.h parses both). Counts must be whole numbers (they were
  // truncated, or overflowed the cast); seeds are read exactly, as uint64.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"--epochs=x", "--epochs=x: not a whole number"},
      {"--epochs=1.5", "--epochs=1.5: not a whole number"},
      {"--batch=1e12", "--batch=1e12: not a whole number"},
      {"--batch=0", "--batch=0: must be in [1, 2147483647]"},
      {"--seed=-1", "--seed=-1: not an unsigned whole number"},
      {"--lr=nan", "--lr=nan: the learning rate must be finite (a step with it makes every weight NaN)"},
      // A negative rate made the optimizer climb the loss (training/learning_rate.h).
      {"--lr=-0.1",
       "--lr=-0.1: the learning rate must be >= 0 (a negative one makes the optimizer climb the loss; 0 leaves "
       "the weights as they are)"},
      {"--precision=f64", "--precision=f64: one of f32, bf16, f16"},
      {"--partial-load", "--partial-load needs --checkpoint-in"},
      {"--schedule=cosine", "unknown flag '--schedule' (--help lists the flags)"},
      {"--bn", "unknown flag '--bn' (--help lists the flags)"},  // the CNN's own
      // One of two different checkpoints was silently ignored, in either order.
      {"--resume=/a.safetensors --checkpoint-in=/b.safetensors",
       "--resume=/a.safetensors and --checkpoint-in=/b.safetensors name different checkpoints (--resume is "
       "--checkpoint-in); give one"},
      {"--checkpoint-in=/b.safetensors --resume=/a.safetensors",
       "--resume=/a.safetensors and --checkpoint-in=/b.safetensors name different checkpoints (--resume is "
       "--checkpoint-in); give one"},
  };
  for (const auto& [flag, message] : refused) {
    r = run("examples/fashion_mnist/mlp " + flag);
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_EQ(r.out, "error: " + message + "\n") << flag;
  }
  // A batch larger than the training set left no steps per epoch, and the resume
  // arithmetic divided by zero (SIGFPE); the training driver's error says so.
  r = run("examples/fashion_mnist/mlp --batch=60001 --epochs=1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("60000 training samples do not make one batch of 60001 (the model's batch size)"),
            std::string::npos)
      << r.out;
  r = run("examples/fashion_mnist/mlp --backend=tpu --max-steps=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("unknown backend 'tpu'; backends: cpu, cuda, reference"), std::string::npos) << r.out;
  // Output paths are checked before the data is read (a directory was found at the end).
  const std::string dir = weft::testing::test_tmpdir();
  r = run("examples/fashion_mnist/mlp --checkpoint-out=" + dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "error: --checkpoint-out=" + dir + ": that is a directory; name a file\n");
}

// --serve takes a TCP port, refused as the training binaries refuse it: `mlp --serve=70000`
// printed http://127.0.0.1:70000/ and listened on 4464 (70000 mod 65536), and 65536 got a
// free port. (--data=/nonexistent: had the flag been taken, the run would stop at the data.)
TEST(FashionMnist, ServeTakesOnlyATcpPort) {
  for (const std::string port : {"70000", "65536", "-1"}) {
    Result r = run("examples/fashion_mnist/mlp --epochs=1 --max-steps=1 --data=/nonexistent --serve=" + port);
    EXPECT_EQ(r.exit_code, 2) << port;
    EXPECT_EQ(r.out, "error: --serve=" + port + ": must be in [0, 65535]\n") << port;
  }
}

// The reference-interpreter example reads its flags with the same parser (they were read
// with atoi: --epochs=1.5 trained one epoch, --epochs=x none).
TEST(FashionMnist, TrainMlpSharesTheFlagParser) {
  for (const auto& [flag, message] : std::vector<std::pair<std::string, std::string>>{
           {"--epochs=1.5", "--epochs=1.5: not a whole number"},
           {"--steps=x", "--steps=x: not a whole number"},
           {"--seed=-1", "--seed=-1: not an unsigned whole number"},
           {"--lr=1e", "--lr=1e: not a number"},
           {"--serve=0", "unknown flag '--serve' (--help lists the flags)"}}) {
    Result r = run("examples/fashion_mnist/train_mlp " + flag);
    EXPECT_EQ(r.exit_code, 2) << flag;
    EXPECT_EQ(r.out, "error: " + message + "\n") << flag;
  }
}

// --help lists the shared flags with the examples' defaults, and the examples' own.
TEST(FashionMnist, HelpListsTheFlags) {
  Result r = run("examples/fashion_mnist/cnn --help");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("usage: cnn [--flag=value ...]\n", 0), 0u) << r.out;
  for (const std::string flag : {"--epochs=N", "--serve=N", "--checkpoint-in=PATH", "--resume=PATH",
                                 "--batch=N", "--backend=NAME", "--no-cuda-graph", "--tf32", "--bn", "--log-every=N",
                                 "--bucket-mb=F", "--first-bucket-mb=F"}) {
    EXPECT_NE(r.out.find("\n  " + flag), std::string::npos) << flag << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("epochs to train (a resumed run counts the checkpoint's) (default: 10)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("examples per training step (default: 64)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("--schedule"), std::string::npos) << r.out;
}

}  // namespace
