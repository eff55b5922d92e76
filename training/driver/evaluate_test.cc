// The driver's evaluation, in process, on a JIT-compiled model: batches of the eval
// inputs' static size with the last one padded, compared with the Trainer evaluating the
// whole split at once; and run_driver's exit statuses where the model and the flags
// disagree; a schedule cycling the momentum of a model whose step takes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include "frontend/jit_trainable.h"
#include "frontend/modules.h"
#include "training/driver/driver.h"
#include "formats/npy.h"
#include "training/schedule.h"

namespace weft::driver {
namespace {
namespace evaluate_test {  // this file's names, apart in its package's unity test

/// A 4-feature, 3-class problem: the class is the argmax of the first three features.
Split classification(int64_t n, uint32_t seed) {
  Split s;
  Tensor x(Type{DType::f32, {n, 4}});
  Tensor y(Type{DType::i64, {n}});
  uint32_t state = seed;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      state = state * 1664525u + 1013904223u;
      x.data<float>()[i * 4 + j] = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) - 0.5f;
    }
    const float* r = x.data<float>() + i * 4;
    y.data<int64_t>()[i] = r[0] >= r[1] && r[0] >= r[2] ? 0 : r[1] >= r[2] ? 1 : 2;
  }
  s.columns = {Column{x, "x", ""}, Column{y, "y", ""}};
  s.classes = y;
  s.source = "synthetic";
  return s;
}

std::unique_ptr<JitTrainable> classifier(int64_t eval_batch) {
  StatusOr<FlowPtr> net = FlowBuilder::from(Linear(4, 16)).through(ReLU()).through(Linear(16, 3)).build();
  EXPECT_TRUE(net.ok());
  StatusOr<std::unique_ptr<JitTrainable>> m =
      JitTrainable::compile(*net, {{"x", Type{DType::f32, {8, 4}}}}, LossSpec::cross_entropy(),
                            OptimizerSpec::adam(0.05), {}, eval_batch);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return std::move(*m);
}

TEST(Evaluate, PadsTheLastBatchAndDropsItsOutputs) {
  std::unique_ptr<JitTrainable> model = classifier(/*eval_batch=*/5);
  EXPECT_EQ(model->eval_inputs()[0].type, (Type{DType::f32, {5, 4}}));
  EXPECT_EQ(model->eval_outputs()[0].type, (Type{DType::f32, {5, 3}}));
  EXPECT_EQ(model->step_inputs()[1].type, (Type{DType::i64, {8}}));
  Split train = classification(64, 1);
  for (int64_t s = 0; s < 40; ++s) {
    std::vector<int64_t> order = epoch_order(0, s / 8, 64);
    std::vector<Tensor> batch;
    for (size_t k = 0; k < 2; ++k) {
      batch.push_back(gather_rows(train.columns[k], order.data() + (s % 8) * 8, 8, model->step_inputs()[k].type));
    }
    ASSERT_TRUE(model->step(batch).ok());
  }

  Split test = classification(23, 2);  // 4 batches of 5, then 3 rows and 2 of padding
  StatusOr<Evaluation> e = evaluate_split(*model, test);
  ASSERT_TRUE(e.ok()) << e.error().to_string();

  // The Trainer evaluates any batch size: all 23 rows at once, no padding.
  StatusOr<std::vector<Tensor>> whole = model->trainer().evaluate({test.columns[0].array});
  ASSERT_TRUE(whole.ok());
  int64_t correct = 0;
  double ce = 0;
  for (int64_t i = 0; i < 23; ++i) {
    const float* r = (*whole)[0].data<float>() + i * 3;
    const int64_t best = std::max_element(r, r + 3) - r;
    const int64_t label = test.classes->data<int64_t>()[i];
    correct += best == label;
    ce += std::log(std::exp(r[0]) + std::exp(r[1]) + std::exp(r[2])) - r[label];
  }
  EXPECT_EQ(e->samples, 23);
  ASSERT_TRUE(e->accuracy.has_value());
  EXPECT_DOUBLE_EQ(*e->accuracy, correct / 23.0);
  EXPECT_GT(*e->accuracy, 0.6);  // trained: well past chance (1/3)
  ASSERT_TRUE(e->loss.has_value());
  EXPECT_NEAR(*e->loss, ce / 23, 1e-6);
  EXPECT_EQ(e->loss_name, "cross-entropy");
  char expected[128];
  std::snprintf(expected, sizeof(expected), "test accuracy: %.4f, test cross-entropy: %.4f", correct / 23.0, ce / 23);
  EXPECT_EQ(e->to_string(), expected);
}

TEST(Evaluate, MeanSquaredErrorForOtherTargets) {
  StatusOr<FlowPtr> net = FlowBuilder::from(Linear(3, 2)).build();
  ASSERT_TRUE(net.ok());
  StatusOr<std::unique_ptr<JitTrainable>> model = JitTrainable::compile(
      *net, {{"x", Type{DType::f32, {4, 3}}}}, LossSpec::mse(), OptimizerSpec::sgd(0.1), {}, /*eval_batch=*/4);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ((*model)->step_inputs()[1].type, (Type{DType::f32, {4, 2}}));
  Split test;
  Tensor x(Type{DType::f32, {6, 3}}), y(Type{DType::f32, {6, 2}});
  for (int64_t i = 0; i < 18; ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i % 7);
  for (int64_t i = 0; i < 12; ++i) y.data<float>()[i] = 0.3f * static_cast<float>(i % 5);
  test.columns = {Column{x, "x", ""}, Column{y, "y", ""}};
  StatusOr<Evaluation> e = evaluate_split(**model, test);
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  StatusOr<std::vector<Tensor>> whole = (*model)->trainer().evaluate({x});
  ASSERT_TRUE(whole.ok());
  double mse = 0;
  for (int64_t i = 0; i < 12; ++i) {
    const double d = (*whole)[0].data<float>()[i] - y.data<float>()[i];
    mse += d * d;
  }
  EXPECT_FALSE(e->accuracy.has_value());
  ASSERT_TRUE(e->loss.has_value());
  EXPECT_NEAR(*e->loss, mse / 12, 1e-6);
  EXPECT_EQ(e->to_string().rfind("test mse: ", 0), 0u);
}

TEST(JitTrainable, TakesOnlyItsStaticTypes) {
  std::unique_ptr<JitTrainable> model = classifier(/*eval_batch=*/5);
  StatusOr<double> loss = model->step({Tensor(Type{DType::f32, {4, 4}}), Tensor(Type{DType::i64, {4}})});
  ASSERT_FALSE(loss.ok());
  EXPECT_EQ(loss.error().message, "step: 'x' is f32[8,4], got f32[4,4]");
  loss = model->step({Tensor(Type{DType::f32, {8, 4}})});
  ASSERT_FALSE(loss.ok());
  EXPECT_EQ(loss.error().message, "step takes 2 tensors, got 1");
  StatusOr<std::vector<Tensor>> out = model->evaluate({Tensor(Type{DType::f32, {8, 4}})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().message, "evaluate: 'x' is f32[5,4], got f32[8,4]");
  EXPECT_EQ(model->steps(), 0);
}

/// run_driver in process: the exit status and what went to stdout and stderr.
struct DriverRun {
  int status;
  std::string out, err;
};

DriverRun run(const std::vector<std::string>& args, const ModelFactory& factory) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  DriverRun r;
  r.status = run_driver(args, "train", factory, out, err);
  for (auto [file, text] : {std::pair{out, &r.out}, {err, &r.err}}) {
    std::rewind(file);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), file)) > 0) text->append(buf, n);
    std::fclose(file);
  }
  return r;
}

std::string tmp(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

TEST(RunDriver, ExitStatuses) {
  ModelFactory factory = [](const ModelOptions&) -> StatusOr<std::unique_ptr<Trainable>> {
    return std::unique_ptr<Trainable>(classifier(5));
  };
  Split data = classification(40, 3);
  ASSERT_TRUE(write_npy(tmp("x.npy"), data.columns[0].array).ok());
  ASSERT_TRUE(write_npy(tmp("y.npy"), data.columns[1].array).ok());
  const std::string train = "--train=" + tmp("x.npy") + "," + tmp("y.npy");

  DriverRun r = run({train, "--test=" + tmp("x.npy") + "," + tmp("y.npy"), "--epochs=2"}, factory);
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("epoch 2/2: mean loss "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test accuracy: 0."), std::string::npos) << r.out;

  r = run({"--epochs=x"}, factory);
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_EQ(r.err, "error: --epochs=x: not a whole number\n");
  r = run({"--train=" + tmp("x.npy")}, factory);
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_EQ(r.err, "error: --train gives 1 array; the model's step takes 2 (the inputs, then the target): "
                   "'x' f32[8,4], 'target' i64[8]\n");
  r = run({train, "--schedule=warmup-cosine", "--warmup-steps=10"}, factory);  // 40/8 = 5 steps
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_EQ(r.err, "error: --warmup-steps=10 must be less than the run's 5 steps\n");
  r = run({train, "--epochs=9223372036854775807"}, factory);
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_EQ(r.err, "error: --epochs=9223372036854775807: 5 steps per epoch make more steps than 64 bits count\n");
  r = run({"--help"}, factory);
  EXPECT_EQ(r.status, kExitOk);
  EXPECT_EQ(r.out.rfind("usage: train ", 0), 0u);

  // Labels that are not classes of the model's output.
  Tensor bad = data.columns[1].array;
  bad.data<int64_t>()[7] = 3;
  ASSERT_TRUE(write_npy(tmp("bad.npy"), bad).ok());
  r = run({"--train=" + tmp("x.npy") + "," + tmp("bad.npy")}, factory);
  EXPECT_EQ(r.status, kExitRuntime);
  EXPECT_EQ(r.err, "error: " + tmp("bad.npy") + ", row 7: the label 3 is not one of the model's 3 classes "
                   "(its output 'output' is f32[5,3])\n");
  {  // The same from a CSV column: the error names the column too.
    std::ofstream csv(tmp("bad.csv"));
    csv << "id,label\n";
    for (int64_t i = 0; i < bad.numel(); ++i) csv << i << "," << bad.data<int64_t>()[i] << "\n";
  }
  r = run({"--train=" + tmp("x.npy") + "," + tmp("bad.csv") + ":label"}, factory);
  EXPECT_EQ(r.status, kExitRuntime);
  // Its place is the file's line (the header is line 1), as the CSV reader's own errors say.
  EXPECT_EQ(r.err, "error: " + tmp("bad.csv") + ", column 'label', line 9 (sample 7): the label 3 is not one of "
                   "the model's 3 classes (its output 'output' is f32[5,3])\n");
  r = run({"--train=" + tmp("x.npy") + "," + tmp("y.npy"), "--checkpoint-out=/nonexistent/ck.safetensors"},
          factory);
  EXPECT_EQ(r.status, kExitRuntime);
  EXPECT_EQ(r.err, "error: --checkpoint-out=/nonexistent/ck.safetensors: the directory /nonexistent does not "
                   "exist\n");
  Split few = classification(7, 4);  // less than one batch of 8
  ASSERT_TRUE(write_npy(tmp("fx.npy"), few.columns[0].array).ok());
  ASSERT_TRUE(write_npy(tmp("fy.npy"), few.columns[1].array).ok());
  r = run({"--train=" + tmp("fx.npy") + "," + tmp("fy.npy")}, factory);
  EXPECT_EQ(r.status, kExitRuntime);
  EXPECT_EQ(r.err, "error: train: 7 training samples do not make one batch of 8 (the model's batch size)\n");

  ModelFactory failing = [](const ModelOptions&) -> StatusOr<std::unique_ptr<Trainable>> {
    return Error{"no such model"};
  };
  r = run({}, failing);
  EXPECT_EQ(r.status, kExitRuntime);
  EXPECT_EQ(r.err, "error: no such model\n");
}

// --tf32 reaches the model's factory (ModelOptions::bind.tf32, which a training binary's
// generated source binds its CompiledModel with), off without the flag.
TEST(RunDriver, Tf32ReachesTheFactory) {
  Split data = classification(8, 3);
  ASSERT_TRUE(write_npy(tmp("tx.npy"), data.columns[0].array).ok());
  ASSERT_TRUE(write_npy(tmp("ty.npy"), data.columns[1].array).ok());
  std::vector<bool> asked;
  ModelFactory factory = [&asked](const ModelOptions& options) -> StatusOr<std::unique_ptr<Trainable>> {
    asked.push_back(options.bind.tf32);
    return std::unique_ptr<Trainable>(classifier(5));
  };
  const std::string train = "--train=" + tmp("tx.npy") + "," + tmp("ty.npy");
  for (const std::vector<std::string>& args : {std::vector<std::string>{train}, {train, "--tf32"}}) {
    DriverRun r = run(args, factory);
    EXPECT_EQ(r.status, kExitOk) << r.err;
  }
  EXPECT_EQ(asked, (std::vector<bool>{false, true}));
}

// The one place the factory's options come from flags: every field from its flag, the
// bucket sizes from --bucket-mb and --first-bucket-mb (a data-parallel run's own; the
// in-process driver cannot launch ranks, so model_options is checked directly).
TEST(RunDriver, ModelOptionsComeFromTheFlags) {
  StatusOr<DriverConfig> config = parse_flags({"--seed=7", "--threads=3", "--max-memory=64M", "--tf32",
                                               "--data-parallel", "--bucket-mb=0.5", "--first-bucket-mb=0"});
  ASSERT_TRUE(config.ok()) << config.error().to_string();
  std::shared_ptr<collective::Communicator> world = collective::single_process();
  const ModelOptions o = model_options(*config, world);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.bind.num_threads, 3);
  EXPECT_EQ(o.bind.max_memory, int64_t{64} << 20);
  EXPECT_TRUE(o.bind.tf32);
  EXPECT_EQ(o.bind.communicator, world);
  EXPECT_EQ(o.bind.all_reduce_bucket_bytes, int64_t{1} << 19);
  EXPECT_EQ(o.bind.first_all_reduce_bucket_bytes, 0);
  StatusOr<DriverConfig> defaults = parse_flags({});
  ASSERT_TRUE(defaults.ok());
  const ModelOptions d = model_options(*defaults, nullptr);
  EXPECT_EQ(d.bind.all_reduce_bucket_bytes, int64_t{25} << 20);
  EXPECT_EQ(d.bind.first_all_reduce_bucket_bytes, int64_t{1} << 20);
  EXPECT_EQ(d.bind.communicator, nullptr);
}

/// The classifier, logging the batches the driver prefetches and steps on: each batch's
/// address and the sum of its inputs at the call.
class PrefetchLog final : public Trainable {
 public:
  struct Call {
    bool prefetch;
    const Tensor* x;
    double sum;
  };
  PrefetchLog(std::unique_ptr<Trainable> inner, std::vector<Call>& calls) : inner_(std::move(inner)), calls_(calls) {}
  const std::vector<TensorSpec>& step_inputs() const override { return inner_->step_inputs(); }
  const std::vector<TensorSpec>& eval_inputs() const override { return inner_->eval_inputs(); }
  const std::vector<TensorSpec>& eval_outputs() const override { return inner_->eval_outputs(); }
  Status prefetch(const std::vector<Tensor>& batch) override {
    calls_.push_back({true, &batch[0], sum(batch)});
    return inner_->prefetch(batch);
  }
  StatusOr<double> step(const std::vector<Tensor>& batch) override {
    calls_.push_back({false, &batch[0], sum(batch)});
    return inner_->step(batch);
  }
  StatusOr<std::vector<Tensor>> evaluate(const std::vector<Tensor>& inputs) override { return inner_->evaluate(inputs); }
  void set_lr(double lr) override { inner_->set_lr(lr); }
  double lr() const override { return inner_->lr(); }
  bool takes_momentum() const override { return inner_->takes_momentum(); }
  Status set_momentum(double momentum) override { return inner_->set_momentum(momentum); }
  int64_t steps() const override { return inner_->steps(); }
  Status set_check_numerics(bool on) override { return inner_->set_check_numerics(on); }
  Status set_profiling(bool on) override { return inner_->set_profiling(on); }
  std::string profile_report() const override { return inner_->profile_report(); }
  Status save(const std::string& path) const override { return inner_->save(path); }
  StatusOr<LoadReport> load(const std::string& path, bool partial) override { return inner_->load(path, partial); }

 private:
  static double sum(const std::vector<Tensor>& batch) {
    double total = 0;
    for (const Tensor& t : batch) {
      for (int64_t i = 0; i < t.numel(); ++i) total += t.get_double(i) * static_cast<double>(i + 1);
    }
    return total;
  }
  std::unique_ptr<Trainable> inner_;
  std::vector<Call>& calls_;
};

// #31's input overlap, the driver's half (training_run.cc take_step): batch t+1 is taken
// and prefetched before step t runs, every batch is prefetched once and then stepped on
// unchanged (the loader holds two batches: held = 2), and nothing is prefetched past the
// run's last step. The cpu model's prefetch copies nothing; the losses are a plain run's.
TEST(RunDriver, PrefetchesTheNextBatchBeforeEachStep) {
  Split data = classification(64, 6);
  ASSERT_TRUE(write_npy(tmp("px.npy"), data.columns[0].array).ok());
  ASSERT_TRUE(write_npy(tmp("py.npy"), data.columns[1].array).ok());
  std::vector<PrefetchLog::Call> calls;
  ModelFactory factory = [&calls](const ModelOptions&) -> StatusOr<std::unique_ptr<Trainable>> {
    return std::unique_ptr<Trainable>(std::make_unique<PrefetchLog>(classifier(5), calls));
  };
  DriverRun r = run({"--train=" + tmp("px.npy") + "," + tmp("py.npy"), "--epochs=2", "--shuffle-seed=3"}, factory);
  ASSERT_EQ(r.status, kExitOk) << r.err;
  const int64_t steps = 16;  // 64 samples in batches of 8, two epochs
  ASSERT_EQ(calls.size(), static_cast<size_t>(2 * steps));
  // prefetch 0, prefetch 1, step 0, prefetch 2, step 1, ..., prefetch 15, step 14, step 15.
  std::vector<const PrefetchLog::Call*> prefetched, stepped;
  for (size_t i = 0; i < calls.size(); ++i) {
    const bool want_prefetch = i < 2 || (i + 1 < calls.size() && i % 2 == 1);
    EXPECT_EQ(calls[i].prefetch, want_prefetch) << "call " << i;
    (calls[i].prefetch ? prefetched : stepped).push_back(&calls[i]);
  }
  ASSERT_EQ(prefetched.size(), stepped.size());
  for (size_t t = 0; t < stepped.size(); ++t) {
    EXPECT_EQ(stepped[t]->x, prefetched[t]->x) << "step " << t << " was not given the batch prefetched for it";
    EXPECT_EQ(stepped[t]->sum, prefetched[t]->sum) << "batch " << t << " changed between its prefetch and its step";
    if (t > 0) {
      EXPECT_NE(stepped[t]->x, stepped[t - 1]->x) << "steps " << t - 1 << " and " << t << " share a set";
    }
  }
  // Three sets: the batch stepped on, the one prefetched, the one being filled.
  std::set<const Tensor*> sets;
  for (const PrefetchLog::Call* c : stepped) sets.insert(c->x);
  EXPECT_EQ(sets.size(), 3u);
}

/// The classifier with SGD(momentum 0.9), its momentum scheduled (a weft.momentum input)
/// or compiled in.
std::unique_ptr<JitTrainable> sgd_classifier(bool scheduled) {
  StatusOr<FlowPtr> net = FlowBuilder::from(Linear(4, 16)).through(ReLU()).through(Linear(16, 3)).build();
  EXPECT_TRUE(net.ok());
  OptimizerSpec sgd = OptimizerSpec::sgd(0.1, 0.9).with_scheduled_momentum(scheduled);
  StatusOr<std::unique_ptr<JitTrainable>> m =
      JitTrainable::compile(*net, {{"x", Type{DType::f32, {8, 4}}}}, LossSpec::cross_entropy(), sgd, {}, 5);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return std::move(*m);
}

// --schedule=onecycle sets the momentum of a model whose step takes it every step, as
// OneCycleLR's cycle_momentum does: the driver's losses are those of a Trainer stepped
// with the schedule's lr and momentum, and the epoch CSV has their mean momentum. A model
// with its momentum compiled in trains at that momentum, and the first line says so.
TEST(RunDriver, OneCycleCyclesTheMomentumOfAModelThatTakesIt) {
  Split data = classification(8, 5);  // one batch an epoch: the shuffle changes no loss
  ASSERT_TRUE(write_npy(tmp("mx.npy"), data.columns[0].array).ok());
  ASSERT_TRUE(write_npy(tmp("my.npy"), data.columns[1].array).ok());
  const std::vector<std::string> args = {"--train=" + tmp("mx.npy") + "," + tmp("my.npy"), "--epochs=6",
                                         "--schedule=onecycle", "--metrics-csv=" + tmp("m.csv"),
                                         "--epoch-csv=" + tmp("e.csv")};
  auto factory = [](bool scheduled) -> ModelFactory {
    return [scheduled](const ModelOptions&) -> StatusOr<std::unique_ptr<Trainable>> {
      return std::unique_ptr<Trainable>(sgd_classifier(scheduled));
    };
  };
  DriverRun r = run(args, factory(true));
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_NE(r.out.find("OneCycleLR(max_lr=0.1, total_steps=6, pct_start=0.3, anneal_strategy='cos', "
                       "div_factor=25.0, final_div_factor=10000.0, three_phase=False, "
                       "base_momentum=0.85, max_momentum=0.95); no test split"),
            std::string::npos)
      << r.out;
  auto losses_in = [](const std::string& csv) {
    std::ifstream in(csv);
    std::string line;
    std::getline(in, line);  // the header
    std::vector<double> losses;
    while (std::getline(in, line)) {
      const size_t a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
      losses.push_back(std::stod(line.substr(b + 1, c - b - 1)));
    }
    return losses;
  };
  const std::vector<double> driven = losses_in(tmp("m.csv"));
  ASSERT_EQ(driven.size(), 6u);
  const OneCycleLR schedule(0.1, 6);
  std::unique_ptr<JitTrainable> direct = sgd_classifier(true);
  std::vector<int64_t> rows = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<Tensor> batch;
  for (size_t k = 0; k < 2; ++k) batch.push_back(gather_rows(data.columns[k], rows.data(), 8, direct->step_inputs()[k].type));
  for (int64_t t = 0; t < 6; ++t) {
    direct->set_lr(schedule.lr_at(t));
    ASSERT_TRUE(direct->set_momentum(*schedule.momentum_at(t)).ok());
    StatusOr<double> loss = direct->step(batch);
    ASSERT_TRUE(loss.ok());
    EXPECT_NEAR(driven[t], *loss, 1e-6) << "step " << t + 1;
  }
  std::ifstream epochs(tmp("e.csv"));
  std::string header, first;
  std::getline(epochs, header);
  std::getline(epochs, first);
  EXPECT_EQ(header, "epoch,loss,lr,momentum");
  EXPECT_NEAR(std::stod(first.substr(first.rfind(',') + 1)), *schedule.momentum_at(0), 1e-9);

  r = run(args, factory(false));
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_NE(r.out.find("max_momentum=0.95) (momentum not cycled: the model's step compiles it in; build "
                       "its optimizer with with_scheduled_momentum()); no test split"),
            std::string::npos)
      << r.out;
  const std::vector<double> compiled_in = losses_in(tmp("m.csv"));
  ASSERT_EQ(compiled_in.size(), 6u);
  EXPECT_GT(std::abs(compiled_in[5] - driven[5]), 1e-6);  // momentum 0.9 throughout
}

}  // namespace evaluate_test
}  // namespace
}  // namespace weft::driver
