// Training stopped by signals, as a user's job is stopped (issue 16): the AOT training
// binary //examples/fashion_mnist:train (the batch-norm CNN with dropout, compiled for cpu)
// on a small .npy dataset, signalled at random moments and at chosen ones, each time
// checked to leave a checkpoint that loads and to resume exactly where it stopped.
//
// - ResumedRunStoppedBySignalSavesCleanly*: the scenario of bug 1 of issue 16 (a run
//   stopped by SIGINT, resumed from its checkpoint, the resumed run stopped by SIGTERM:
//   about 1 in 4 aborted with `corrupted size vs. prev_size` in the save after the
//   signal), repeated 16 times so that a 1-in-4 failure is missed with probability 1%
//   (rounds 0-7 and 8-15 as two tests, for the target's shards).
// - SignalsAtRandomPointsResumeExactly: one training run cut into many by signals during
//   a step, during a save (while the temporary file exists) and right after a resume;
//   every stop leaves a checkpoint of the step it names, every resume loads it (strictly),
//   and the losses of all the pieces are those of the run never interrupted, bit for bit.
// - StopSignalsReachNoComputingThread: the fix of bug 1. The corruption was oneDNN's
//   (its JIT GEMM kernels point the stack pointer into a heap buffer, so a signal frame
//   pushed there overwrote the heap: oneDNN issue #4845); the driver now blocks SIGINT
//   and SIGTERM on every thread but one watcher (training/driver/stop_signals.h). Checked
//   on the running binary's threads (/proc/PID/task/*/status).
// - MaxMemoryRefusesALargerStep: --max-memory, checked before anything is allocated.
// - AnAddressSpaceLimitGivesAClearErrorNotAnAbort: `ulimit -v`, swept.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "formats/npy.h"
#include "formats/safetensors.h"
#include "tests/testing/subprocess.h"

namespace weft {
namespace {

using testing::CommandResult;
using testing::Process;

const std::string kTrain = "examples/fashion_mnist/train";

std::string tmp(const std::string& name) { return testing::test_tmpdir() + "/" + name; }

// 768 random images and labels (6 batches of 128) as .npy, once; the flags that train on
// them with two threads and print no progress lines.
const std::string& data_flags() {
  static const std::string flags = [] {
    constexpr int64_t n = 768;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> pixel(0, 1);
    Tensor x(Type{DType::f32, {n, 1, 28, 28}}), y(Type{DType::i64, {n}});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = pixel(rng);
    for (int64_t i = 0; i < n; ++i) y.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
    EXPECT_TRUE(write_npy(tmp("x.npy"), x).ok());
    EXPECT_TRUE(write_npy(tmp("y.npy"), y).ok());
    return " --train=" + tmp("x.npy") + "," + tmp("y.npy") + " --threads=2 --log-every=1000000";
  }();
  return flags;
}

// The step a checkpoint holds (its weft.step), or -1 when it does not read as safetensors.
int64_t checkpoint_step(const std::string& path) {
  StatusOr<SafetensorsFile> f = read_safetensors(path);
  if (!f.ok()) return -1;
  auto it = f->metadata.find("weft.step");
  return it == f->metadata.end() ? -1 : std::stoll(it->second);
}

// The step named by `prefix` N in `out` ("checkpoint: A (step " -> N), or -1.
int64_t step_after(const std::string& out, const std::string& prefix) {
  const size_t at = out.rfind(prefix);
  if (at == std::string::npos) return -1;
  return std::stoll(out.substr(at + prefix.size()));
}

// step -> loss, as the metrics CSV prints it (%.9g: every bit of an f32 loss).
std::map<int64_t, std::string> losses(const std::string& csv) {
  std::map<int64_t, std::string> out;
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // epoch,step,loss,...
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    if (cells.size() >= 3) out[std::stoll(cells[1])] = cells[2];
  }
  return out;
}

// Checks what a run stopped by `signal` printed and left: exit status 128 + signal, the
// checkpoint written at the step it stopped at, and a file that holds that step.
void expect_stopped_with_checkpoint(const CommandResult& r, int signal, const std::string& checkpoint) {
  const std::string name = signal == SIGINT ? "SIGINT" : "SIGTERM";
  EXPECT_EQ(r.exit_code, 128 + signal) << r.out;
  const int64_t stopped = step_after(r.out, "interrupted by " + name + " at step ");
  ASSERT_GT(stopped, 0) << r.out;
  EXPECT_EQ(step_after(r.out, "checkpoint: " + checkpoint + " (step "), stopped) << r.out;
  EXPECT_NE(r.out.find("; resume with --checkpoint-in=" + checkpoint + "\n"), std::string::npos) << r.out;
  EXPECT_EQ(checkpoint_step(checkpoint), stopped) << r.out;
}

// Starts `flags`, waits until it trains, lets it run `seconds`, sends `signal`.
CommandResult stop_after(const std::string& flags, double seconds, int signal) {
  Process p(kTrain + data_flags() + flags);
  EXPECT_TRUE(p.wait_for("training on", 60)) << p.out();
  p.read_for(seconds);
  p.signal(signal);
  return p.finish();
}

// Rounds [first, last) of the 16 (the delays of every round drawn from one sequence, so
// the two tests below together run the same 16 rounds as one would; two tests so that
// the target's shards can run them side by side).
void resumed_runs_stopped_by_signal(int first, int last) {
  const std::string a = tmp("a.safetensors"), b = tmp("b.safetensors");
  std::mt19937 rng(16);
  std::uniform_real_distribution<double> delay(0.0, 0.6);
  for (int round = 0; round < last; ++round) {
    const double first_delay = delay(rng), second_delay = delay(rng);
    if (round < first) continue;
    std::remove(a.c_str());
    std::remove(b.c_str());
    SCOPED_TRACE("round " + std::to_string(round) + ": SIGINT after " + std::to_string(first_delay) +
                 " s, SIGTERM after " + std::to_string(second_delay) + " s of the resumed run");
    CommandResult r1 = stop_after(" --epochs=1000 --checkpoint-out=" + a, first_delay, SIGINT);
    expect_stopped_with_checkpoint(r1, SIGINT, a);
    CommandResult r2 =
        stop_after(" --epochs=1000 --checkpoint-in=" + a + " --checkpoint-out=" + b, second_delay, SIGTERM);
    EXPECT_NE(r2.out.find("resumed from " + a + " at step " + std::to_string(checkpoint_step(a)) + "\n"),
              std::string::npos)
        << r2.out;
    expect_stopped_with_checkpoint(r2, SIGTERM, b);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(TrainingFaults, ResumedRunStoppedBySignalSavesCleanlyRounds0To7) { resumed_runs_stopped_by_signal(0, 8); }
TEST(TrainingFaults, ResumedRunStoppedBySignalSavesCleanlyRounds8To15) { resumed_runs_stopped_by_signal(8, 16); }

// True while a save of `path` is under way: its temporary file (formats/file_io.h) exists.
bool saving(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = path.substr(0, slash), prefix = path.substr(slash + 1) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (const dirent* e = ::readdir(d)) found = found || std::string(e->d_name).rfind(prefix, 0) == 0;
  ::closedir(d);
  return found;
}

TEST(TrainingFaults, SignalsAtRandomPointsResumeExactly) {
  // 3 epochs of 6 steps; the evaluation's split is the training one.
  const std::string run = " --epochs=3 --seed=5 --shuffle-seed=9 --test=" + tmp("x.npy") + "," + tmp("y.npy");
  data_flags();
  CommandResult whole = testing::run_command(kTrain + data_flags() + run + " --metrics-csv=" + tmp("whole.csv"));
  ASSERT_EQ(whole.exit_code, 0) << whole.out;
  const std::map<int64_t, std::string> expected = losses(tmp("whole.csv"));
  ASSERT_EQ(expected.size(), 18u) << whole.out;

  // Checkpoints every step, so that a save is under way a good part of the time.
  const std::string ck = tmp("faults.safetensors");
  std::remove(ck.c_str());
  std::map<int64_t, std::string> seen;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> delay(0.0, 0.4);
  int64_t at = 0;  // the step the checkpoint holds
  bool done = false;
  for (int piece = 0; piece < 40 && !done; ++piece) {
    const std::string csv = tmp("piece" + std::to_string(piece) + ".csv");
    const int signal = piece % 2 ? SIGTERM : SIGINT;
    const char* when[] = {"during a step", "during a save", "right after a resume"};
    const int point = at == 0 ? piece % 2 : piece % 3;  // a resume needs a checkpoint
    SCOPED_TRACE("piece " + std::to_string(piece) + " from step " + std::to_string(at) + ": signal " +
                 when[point]);
    Process p(kTrain + data_flags() + run + " --checkpoint-every=1 --checkpoint-out=" + ck +
              (at > 0 ? " --checkpoint-in=" + ck : "") + " --metrics-csv=" + csv);
    if (point == 2) {
      ASSERT_TRUE(p.wait_for("resumed from " + ck + " at step " + std::to_string(at) + "\n", 60)) << p.out();
    } else {
      ASSERT_TRUE(p.wait_for("training on", 60)) << p.out();
      p.read_for(delay(rng));
      if (point == 1) {
        // Until the next save's temporary file appears (or the run ends).
        for (int i = 0; i < 20000 && !saving(ck) && p.out().find("done: ") == std::string::npos; ++i) {
          p.read_for(0.0005);
        }
      }
    }
    const bool in_save = saving(ck);
    p.signal(signal);
    CommandResult r = p.finish();
    std::printf("piece %d: from step %lld, %s %s%s: exit %d\n", piece, static_cast<long long>(at),
                signal == SIGINT ? "SIGINT" : "SIGTERM", when[point], in_save ? " (temporary file seen)" : "",
                r.exit_code);
    if (r.exit_code == 0) {
      done = true;  // it ended before the signal came
    } else {
      expect_stopped_with_checkpoint(r, signal, ck);
      if (::testing::Test::HasFailure()) break;
      at = checkpoint_step(ck);
    }
    for (const auto& [step, loss] : losses(csv)) {
      auto [it, fresh] = seen.emplace(step, loss);
      EXPECT_TRUE(fresh) << "step " << step << " was trained twice\n" << r.out;
    }
  }
  ASSERT_TRUE(done) << "40 pieces did not finish the run";
  EXPECT_EQ(seen, expected);
}

// The mask bits of `field` (SigBlk, SigCgt) in a /proc status file.
uint64_t mask_of(const std::string& status_file, const std::string& field) {
  std::ifstream in(status_file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1), nullptr, 16);
  }
  return 0;
}

TEST(TrainingFaults, StopSignalsReachNoComputingThread) {
  Process p(kTrain + data_flags() + " --epochs=1000");
  ASSERT_TRUE(p.wait_for("training on", 60)) << p.out();
  p.read_for(0.3);  // steps under way: the pools' and oneDNN's threads exist
  const uint64_t stop_bits = (uint64_t{1} << (SIGINT - 1)) | (uint64_t{1} << (SIGTERM - 1));
  const std::string tasks = "/proc/" + std::to_string(p.pid()) + "/task";
  int threads = 0, taking = 0;
  DIR* d = ::opendir(tasks.c_str());
  ASSERT_NE(d, nullptr);
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string status = tasks + "/" + e->d_name + "/status";
    ++threads;
    if ((mask_of(status, "SigBlk") & stop_bits) != stop_bits) ++taking;
    // No handler: a handler's frame is what oneDNN's kernels cannot take.
    EXPECT_EQ(mask_of(status, "SigCgt") & stop_bits, 0u) << status;
  }
  ::closedir(d);
  EXPECT_GE(threads, 3);      // the main thread, a pool worker, the watcher
  EXPECT_EQ(taking, 1);       // the watcher alone
  p.signal(SIGTERM);
  EXPECT_EQ(p.finish().exit_code, 143);
}

// The AOT binary's --max-memory (as weftc's): a step planned larger than the limit is
// refused when the model is made, before its buffers are allocated or the data is read.
TEST(TrainingFaults, MaxMemoryRefusesALargerStep) {
  CommandResult r = testing::run_command(kTrain + data_flags() + " --max-memory=1M");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("error: program @model needs ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(" but only 1.0 MiB are available (the memory limit); largest buffers: "), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("training on"), std::string::npos) << r.out;
  r = testing::run_command(kTrain + data_flags() + " --max-memory=1G --max-steps=1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// #28: under an address-space limit (`ulimit -v`) the driver died with an uncaught
// std::bad_alloc from about 250 MB up. Swept from far below what it needs to what it
// needs: the one refusal (runtime/out_of_memory.h), an error naming what could not be
// allocated, or the run; never an abort.
TEST(TrainingFaults, AnAddressSpaceLimitGivesAClearErrorNotAnAbort) {
  int worked = 0, refused = 0;
  for (int mib : {150, 250, 300, 350, 400, 450, 2000}) {
    CommandResult r = testing::run_command("ulimit -v " + std::to_string(mib * 1024) + "; exec " + kTrain +
                                           data_flags() + " --max-steps=1");
    if (r.exit_code == 0) {
      ++worked;
      continue;
    }
    ++refused;
    EXPECT_EQ(r.exit_code, 1) << mib << " MiB:\n" << r.out;
    EXPECT_NE(r.out.find("error: "), std::string::npos) << mib << " MiB:\n" << r.out;
    EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << mib << " MiB:\n" << r.out;
  }
  EXPECT_GT(worked, 0);
  EXPECT_GT(refused, 0);
  CommandResult low = testing::run_command("ulimit -v 153600; exec " + kTrain + data_flags() + " --max-steps=1");
  EXPECT_NE(low.out.find("train: error: the address-space limit (ulimit -v: 150 MiB) leaves less than 256 MiB free "
                         "once weft's libraries are loaded; raise the limit"),
            std::string::npos)
      << low.out;
}

}  // namespace
}  // namespace weft
