// libFuzzer target: the training driver's resume path with a mutated checkpoint — the
// AOT-compiled model of :resume_model (a convolution, batch norm, a linear layer, Adam)
// loading it and training one step, as `train --checkpoint-in=FILE` does. Inputs are
// mutated by checkpoint_mutator.h (metadata values, missing, renamed and extra tensors,
// dtypes and shapes, with valid checksums; and plain bytes). Per input:
//
//   1. the model itself (Trainable::load, strict and partial): a failed load returns an
//      error naming the file and leaves every value and the step count exactly as they
//      were; a load that succeeds keeps every value's type, and a step on it succeeds;
//   2. the driver (run_driver with --checkpoint-in=FILE --max-steps=1 --epochs=t+1, t the
//      checkpoint's step, with a test split and --checkpoint-out): a checkpoint the model
//      refused ends the run with status 1 and one error line naming the file; one it
//      accepted trains exactly one step from t, evaluates, and writes a checkpoint that
//      loads strictly at step t+1.
//
// WEFT_FUZZ_WRITE_SEED=PATH writes the seed checkpoint (the model after two steps, so the
// optimizer slots and running statistics are not their initial values) and exits.

#include <stdio.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "training/aot/compiled_model.h"
#include "formats/checkpoint.h"
#include "training/driver/driver.h"
#include "training/driver/trainable.h"
#include "formats/npy.h"
#include "runtime/tensor.h"
#include "tests/fuzz/checkpoint_mutator.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using weft::Tensor;
using weft::driver::Trainable;

constexpr int64_t kTrainSamples = 6, kTestSamples = 4, kClasses = 3;

struct Fixture {
  std::string dir;         ///< Scratch folder: the data, the seed checkpoint, outputs.
  std::vector<Tensor> batch;
  std::unique_ptr<Trainable> model;
  std::map<std::string, Tensor> values;  ///< The model's values at the seed checkpoint.
  int64_t steps = 0;
  std::string seed_path;   ///< Those values, as a checkpoint.
  std::FILE* devnull = nullptr;
};

Tensor images(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n * 16));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37 % 23)) / 23.0f - 0.5f;
  return Tensor::from_vector<float>({n, 1, 4, 4}, v);
}

Tensor labels(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i % kClasses;
  return Tensor::from_vector<int64_t>({n}, v);
}

void write(const std::string& path, const Tensor& t) {
  weft::Status s = weft::write_npy(path, t);
  FUZZ_CHECK(s.ok(), "writing " + path + ": " + s.to_string());
}

/// Every value of the model: the factory makes an aot::CompiledModel.
std::map<std::string, Tensor> values_of(const Trainable& model) {
  return dynamic_cast<const weft::aot::CompiledModel&>(model).values();
}

Fixture make_fixture() {
  Fixture f;
  const char* tmp = std::getenv("TMPDIR");
  f.dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/weft_resume_fuzz." +
          std::to_string(getpid());
  std::system(("mkdir -p '" + f.dir + "'").c_str());
  write(f.dir + "/x.npy", images(kTrainSamples));
  write(f.dir + "/y.npy", labels(kTrainSamples));
  write(f.dir + "/tx.npy", images(kTestSamples));
  write(f.dir + "/ty.npy", labels(kTestSamples));
  f.devnull = std::fopen("/dev/null", "w");
  FUZZ_CHECK(f.devnull != nullptr, "cannot open /dev/null");

  weft::StatusOr<std::unique_ptr<Trainable>> model =
      weft::driver::make_compiled_model({.seed = 0, .bind = {.num_threads = 1}});
  FUZZ_CHECK(model.ok(), "the model: " + model.status().to_string());
  f.model = std::move(*model);
  const int64_t batch = f.model->step_inputs()[0].type.shape[0];
  f.batch = {images(batch), labels(batch)};
  for (int i = 0; i < 2; ++i) {
    weft::StatusOr<double> loss = f.model->step(f.batch);
    FUZZ_CHECK(loss.ok(), "a fixture step: " + loss.status().to_string());
  }
  f.values = values_of(*f.model);
  f.steps = f.model->steps();
  f.seed_path = f.dir + "/seed.safetensors";
  weft::Status s = f.model->save(f.seed_path);
  FUZZ_CHECK(s.ok(), "the seed checkpoint: " + s.to_string());
  return f;
}

Fixture& fixture() {
  static Fixture f = make_fixture();
  return f;
}

/// The model is back at the seed checkpoint's values and step.
void check_unchanged(const Fixture& f, const std::string& after) {
  const std::map<std::string, Tensor> now = values_of(*f.model);
  FUZZ_CHECK(now.size() == f.values.size(), after + " changed the set of values");
  for (const auto& [k, v] : f.values) {
    FUZZ_CHECK(now.count(k) == 1 && now.at(k) == v, after + " changed '" + k + "'");
  }
  FUZZ_CHECK(f.model->steps() == f.steps, after + " changed the step count");
}

void restore(Fixture& f) {
  weft::StatusOr<weft::LoadReport> r = f.model->load(f.seed_path, /*partial=*/false);
  FUZZ_CHECK(r.ok(), "reloading the seed checkpoint: " + r.status().to_string());
  check_unchanged(f, "reloading the seed checkpoint");
}

/// run_driver on `args`; returns the status, and the error stream's text in `err`.
int drive(Fixture& f, const std::vector<std::string>& args, std::string& err) {
  char* buffer = nullptr;
  size_t length = 0;
  std::FILE* err_stream = open_memstream(&buffer, &length);
  FUZZ_CHECK(err_stream != nullptr, "open_memstream");
  const int status =
      weft::driver::run_driver(args, "resume_fuzz", weft::driver::make_compiled_model, f.devnull, err_stream);
  std::fclose(err_stream);
  err.assign(buffer, length);
  std::free(buffer);
  return status;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weft::fuzz::write_seed_if_asked([](const std::string& path) { return fixture().model->save(path); });
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  return weft::fuzz::mutate_checkpoint(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = fixture();
  const std::string path = weft::fuzz::write_scratch_file("weft_resume_fuzz", ".safetensors", data, size);

  // 1. The model: strict, then partial.
  bool strict_ok = false;
  int64_t resumed_at = 0;
  for (bool partial : {false, true}) {
    weft::StatusOr<weft::LoadReport> r = f.model->load(path, partial);
    if (!r.ok()) {
      FUZZ_CHECK_ERROR(r);
      FUZZ_CHECK(r.error().to_string().find(path) != std::string::npos,
                 "a load error that does not name the file: " + r.error().to_string());
      check_unchanged(f, "a failed load (" + r.error().to_string() + ")");
      continue;
    }
    if (!partial) {
      strict_ok = true;
      resumed_at = f.model->steps();
    }
    const std::map<std::string, Tensor> loaded = values_of(*f.model);
    for (const auto& [k, v] : f.values) {
      FUZZ_CHECK(loaded.at(k).type() == v.type(), "a load changed the type of '" + k + "'");
    }
    const int64_t loaded_steps = f.model->steps();
    weft::StatusOr<double> loss = f.model->step(f.batch);
    // A model at the step limit refuses the next step (check_next_step).
    FUZZ_CHECK(loss.ok() == (loaded_steps < weft::kMaxSteps),
               "a step after a load: " + (loss.ok() ? std::string("ran at the step limit") : loss.status().to_string()));
    restore(f);
  }

  // 2. The driver, resuming for one step.
  if (resumed_at < weft::kMaxSteps) {  // a model at the limit takes no step
    const std::string out = f.dir + "/out.safetensors";
    std::string err;
    const int status = drive(f,
                             {"--train=" + f.dir + "/x.npy," + f.dir + "/y.npy",
                              "--test=" + f.dir + "/tx.npy," + f.dir + "/ty.npy",
                              "--checkpoint-in=" + path, "--checkpoint-out=" + out, "--max-steps=1",
                              "--epochs=" + std::to_string(strict_ok ? resumed_at + 1 : 1),
                              "--threads=1", "--log-every=1"},
                             err);
    if (!strict_ok) {
      FUZZ_CHECK(status == weft::driver::kExitRuntime,
                 "the driver accepted a checkpoint the model refused (status " + std::to_string(status) + ")");
      FUZZ_CHECK(err.find(path) != std::string::npos && err.find('\n') == err.size() - 1,
                 "the driver's error is not one line naming the checkpoint: " + err);
    } else {
      FUZZ_CHECK(status == weft::driver::kExitOk, "a resumed run failed (status " + std::to_string(status) +
                                                      "): " + err);
      weft::StatusOr<weft::LoadReport> r = f.model->load(out, /*partial=*/false);
      FUZZ_CHECK(r.ok(), "the resumed run's checkpoint does not load: " + r.status().to_string());
      FUZZ_CHECK(f.model->steps() == resumed_at + 1,
                 "the resumed run's checkpoint is at step " + std::to_string(f.model->steps()) + ", not " +
                     std::to_string(resumed_at + 1));
      restore(f);
      std::remove(out.c_str());
    }
  }
  std::remove(path.c_str());
  return 0;
}
