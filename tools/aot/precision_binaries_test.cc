// Mixed-precision training binaries as a user runs them (issue #30): the driver linked
// with //bench/aot:mlp_bf16 and :mlp_f16 (weft_binary with precision = "bf16" / "f16"
// links the same two libraries). A binary names its precision in --help and on its first
// line, trains at it without the flag or with it, refuses another (pinned); the f16
// binary's progress line and metrics CSV show the loss scale and the skipped updates,
// an inf in the data skips that update and halves the scale, and its checkpoint resumes
// in the bf16 binary.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "formats/npy.h"
#include "runtime/tensor.h"
#include "tests/testing/subprocess.h"

namespace weft::aot {
namespace {

using testing::CommandResult;

std::string tmp(const std::string& name) { return std::string(std::getenv("TEST_TMPDIR")) + "/" + name; }

// 256 rows of the mlp's f32[256] input and target (4 steps per epoch at batch 64), the
// input's row `inf_row` holding an inf (-1: none).
std::string write_data(const std::string& name, int64_t inf_row) {
  Tensor x(Type{DType::f32, Shape({256, 256})}), y(Type{DType::f32, Shape({256, 256})});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = 0.01f * static_cast<float>((i * 7919) % 201 - 100);
    y.data<float>()[i] = 0.01f * static_cast<float>((i * 104729) % 201 - 100);
  }
  if (inf_row >= 0) x.data<float>()[inf_row * 256] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(write_npy(tmp(name + "_x.npy"), x).ok());
  EXPECT_TRUE(write_npy(tmp(name + "_y.npy"), y).ok());
  return " --train=" + tmp(name + "_x.npy") + "," + tmp(name + "_y.npy");
}

CommandResult run(const std::string& binary, const std::string& flags) {
  return testing::run_command("tools/aot/" + binary + " " + flags);
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

TEST(PrecisionBinaries, Bf16BinaryTrainsAtBf16AndRefusesF32) {
  CommandResult help = run("mlp_bf16_train", "--help");
  EXPECT_EQ(help.exit_code, 0) << help.out;
  EXPECT_NE(help.out.find("\nIt trains in bf16 (weft_binary's `precision`); --precision=bf16 is accepted, any "
                          "other is an error.\n"),
            std::string::npos)
      << help.out;
  CommandResult f32 = run("mlp_bf16_train", "--precision=f32" + write_data("bf16", -1));
  EXPECT_EQ(f32.exit_code, 2);
  EXPECT_EQ(f32.out, "error: --precision=f32: this binary's model was compiled for bf16 training, and a "
                     "binary trains at the precision it was built for; build one with precision = \"f32\" "
                     "(weft_binary, tools/aot/weft.bzl)\n");
  for (const char* flag : {"", " --precision=bf16"}) {
    CommandResult r = run("mlp_bf16_train", "--threads=1" + std::string(flag) + write_data("bf16", -1));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("training on 256 samples (train), batch 64, mixed precision bf16, 4 steps per epoch"),
              std::string::npos)
        << r.out;
  }
}

TEST(PrecisionBinaries, F16BinaryShowsTheLossScaleAndSkipsAnInf) {
  const std::string csv = tmp("f16.csv"), ck = tmp("f16.safetensors");
  CommandResult r = run("mlp_f16_train", "--threads=1 --log-every=1 --metrics-csv=" + csv +
                                             " --checkpoint-out=" + ck + write_data("f16", 100));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("batch 64, mixed precision f16, 4 steps per epoch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 4/4 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  loss scale 32768  skipped 1\n"), std::string::npos) << r.out;
  const auto rows = read_csv(csv);
  ASSERT_EQ(rows.size(), 5u);
  ASSERT_GE(rows[0].size(), 2u);
  EXPECT_EQ(rows[0][rows[0].size() - 2], "loss_scale");
  EXPECT_EQ(rows[0].back(), "skipped_steps");
  // The scale halves at the step whose batch holds the inf, and stays halved.
  int skipped = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::string& scale = rows[i][rows[i].size() - 2];
    EXPECT_EQ(scale, rows[i].back() == "0" ? "65536" : "32768") << "step " << i;
    skipped = std::stoi(rows[i].back());
  }
  EXPECT_EQ(skipped, 1);
  // The f16 checkpoint (its loss-scale state optional elsewhere) resumes in the bf16 binary.
  CommandResult resumed = run("mlp_bf16_train", "--threads=1 --epochs=2 --checkpoint-in=" + ck +
                                                    write_data("bf16", -1));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("resumed from " + ck + " at step 4\n"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("epoch 2/2"), std::string::npos) << resumed.out;
}

}  // namespace
}  // namespace weft::aot
