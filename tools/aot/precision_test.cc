// Mixed-precision AOT libraries (weft_library's `precision`, issue #30) at run time:
// //bench/aot:mlp_bf16 and :mlp_f16 beside the f32 //bench/aot:mlp, one model source.
// (Their NAME_test targets compare 30 steps bit for bit with the JIT Trainer at the same precision.)
// Here: each table records its precision; a bf16 step computes other losses than the f32
// one, close to them; an f16 model reports its loss scale (GradScaler's 2^16, nothing
// skipped), and a batch holding an inf skips exactly that update (no value changes but
// the scaler's) and halves the scale; f32 and bf16 models have no loss scaling; and
// checkpoints load across the three precisions, the loss-scale state optional.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bench/aot/mlp.h"
#include "bench/aot/mlp_bf16.h"
#include "bench/aot/mlp_f16.h"
#include "tools/aot/batches.h"
#include "training/aot/compiled_model.h"

namespace weft::aot {
namespace {
namespace precision_test {  // this file's names, apart in its package's unity test

constexpr uint64_t kSeed = 3;

std::unique_ptr<CompiledModel> make(const ModelTable& table) {
  StatusOr<std::unique_ptr<CompiledModel>> m = CompiledModel::create(table, kSeed, {.num_threads = 1});
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

std::vector<Tensor> batch(const CompiledModel& m, uint64_t seed) {
  return random_batch(m.step_inputs(), 0, m.eval_outputs()[0].type.shape.dims.back(), seed);
}

std::string tmp(const std::string& name) { return std::string(std::getenv("TEST_TMPDIR")) + "/" + name; }

bool is_loss_scale_key(const ModelTable& t, const std::string& name) {
  return t.loss_scale_keys.names().count(name) > 0;
}

TEST(AotPrecision, TablesRecordTheirPrecision) {
  EXPECT_EQ(weft_aot::Mlp::table().precision, DType::f32);
  EXPECT_EQ(weft_aot::MlpBf16::table().precision, DType::bf16);
  EXPECT_EQ(weft_aot::MlpF16::table().precision, DType::f16);
  EXPECT_NE(weft_aot::MlpBf16::table().options.find(" --precision=bf16"), std::string::npos);
  EXPECT_EQ(weft_aot::Mlp::table().options.find("--precision"), std::string::npos);
  // Parameters and optimizer slots are f32 master copies at every precision.
  EXPECT_EQ(weft_aot::MlpBf16::table().values.size(), weft_aot::Mlp::table().values.size());
  for (const ValueEntry& v : weft_aot::MlpBf16::table().values) EXPECT_EQ(v.type.dtype, DType::f32) << v.name;
}

// The bf16 step is not the f32 one (its matmuls round to bf16) but close to it.
TEST(AotPrecision, Bf16LossesAreCloseToF32Ones) {
  std::unique_ptr<CompiledModel> f32 = make(weft_aot::Mlp::table()), bf16 = make(weft_aot::MlpBf16::table());
  ASSERT_TRUE(f32 && bf16);
  double largest = 0;
  for (uint64_t i = 0; i < 5; ++i) {
    const std::vector<Tensor> b = batch(*f32, 10 + i);
    StatusOr<double> a = f32->step(b), c = bf16->step(b);
    ASSERT_TRUE(a.ok() && c.ok());
    largest = std::max(largest, std::abs(*a - *c) / std::abs(*a));
  }
  EXPECT_GT(largest, 0);
  EXPECT_LT(largest, 2e-2);
}

TEST(AotPrecision, OnlyF16HasLossScaling) {
  for (const ModelTable* t : {&weft_aot::Mlp::table(), &weft_aot::MlpBf16::table()}) {
    std::unique_ptr<CompiledModel> m = make(*t);
    ASSERT_TRUE(m);
    StatusOr<std::optional<driver::LossScaleReading>> r = m->loss_scale();
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->has_value()) << t->name;
  }
}

// An inf in the batch: that update is skipped (every parameter and optimizer slot as it
// was), the scale halves and the skipped count is 1; the next clean step updates again.
TEST(AotPrecision, F16SkipsAnUpdateWithAnInfAndHalvesTheScale) {
  std::unique_ptr<CompiledModel> m = make(weft_aot::MlpF16::table());
  ASSERT_TRUE(m);
  auto reading = [&] {
    StatusOr<std::optional<driver::LossScaleReading>> r = m->loss_scale();
    EXPECT_TRUE(r.ok() && r->has_value());
    return r.ok() && r->has_value() ? **r : driver::LossScaleReading{-1, -1};
  };
  EXPECT_EQ(reading().scale, 65536);
  ASSERT_TRUE(m->step(batch(*m, 1)).ok());
  EXPECT_EQ(reading().scale, 65536);
  EXPECT_EQ(reading().skipped_steps, 0);
  const std::map<std::string, Tensor> before = m->values();
  std::vector<Tensor> bad = batch(*m, 2);
  bad[0].data<float>()[5] = std::numeric_limits<float>::infinity();
  StatusOr<double> loss = m->step(bad);
  ASSERT_TRUE(loss.ok()) << loss.error().to_string();
  EXPECT_FALSE(std::isfinite(*loss));
  EXPECT_EQ(reading().scale, 32768);
  EXPECT_EQ(reading().skipped_steps, 1);
  const std::map<std::string, Tensor> after = m->values();
  for (const auto& [name, value] : before) {
    if (is_loss_scale_key(m->table(), name)) continue;
    EXPECT_EQ(after.at(name), value) << name << " changed in a skipped update";
  }
  ASSERT_TRUE(m->step(batch(*m, 3)).ok());
  EXPECT_EQ(reading().skipped_steps, 1);
  EXPECT_NE(m->values().at("0.weight"), before.at("0.weight"));
}

// Checkpoints hold f32 master weights at every precision: f16's (with its loss-scale
// state) load strictly into f32 and bf16 models, theirs into an f16 one (whose scale
// stays as it was), and f16's restores the scale and skipped count.
TEST(AotPrecision, CheckpointsLoadAcrossPrecisions) {
  std::unique_ptr<CompiledModel> f16 = make(weft_aot::MlpF16::table());
  ASSERT_TRUE(f16);
  std::vector<Tensor> bad = batch(*f16, 2);
  bad[0].data<float>()[0] = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(f16->step(batch(*f16, 1)).ok());
  ASSERT_TRUE(f16->step(bad).ok());
  const std::string f16_path = tmp("f16.safetensors");
  ASSERT_TRUE(f16->save(f16_path).ok());
  for (const ModelTable* t : {&weft_aot::Mlp::table(), &weft_aot::MlpBf16::table()}) {
    std::unique_ptr<CompiledModel> m = make(*t);
    ASSERT_TRUE(m);
    StatusOr<LoadReport> r = m->load(f16_path, /*partial=*/false);
    ASSERT_TRUE(r.ok()) << t->name << ": " << r.error().to_string();
    EXPECT_EQ(r->skipped, (std::vector<std::string>{"loss_scale", "loss_scale_growth_tracker", "skipped_steps"}));
    EXPECT_EQ(m->steps(), 2);
    EXPECT_EQ(m->values().at("0.weight"), f16->values().at("0.weight"));
    const std::string path = tmp(t->name + ".safetensors");
    ASSERT_TRUE(m->save(path).ok());
    std::unique_ptr<CompiledModel> back = make(weft_aot::MlpF16::table());
    ASSERT_TRUE(back);
    StatusOr<LoadReport> rb = back->load(path, /*partial=*/false);
    ASSERT_TRUE(rb.ok()) << t->name << ": " << rb.error().to_string();
    EXPECT_TRUE(rb->missing.empty());
    EXPECT_EQ((*back->loss_scale())->scale, 65536);  // its own, as created
    EXPECT_EQ(back->values().at("0.weight"), f16->values().at("0.weight"));
  }
  std::unique_ptr<CompiledModel> again = make(weft_aot::MlpF16::table());
  ASSERT_TRUE(again && again->load(f16_path, false).ok());
  EXPECT_EQ((*again->loss_scale())->scale, 32768);
  EXPECT_EQ((*again->loss_scale())->skipped_steps, 1);
}

// A loss scale of 0 (or a negative count) in a checkpoint, as a hand edit leaves it, is
// refused and changes nothing: a scale of 0 made every later update NaN, unreported.
TEST(AotPrecision, ALoadRefusesALossScaleOfZero) {
  std::unique_ptr<CompiledModel> edited = make(weft_aot::MlpF16::table());
  ASSERT_TRUE(edited);
  ASSERT_TRUE(edited->set_value("loss_scale", Tensor::scalar(DType::f32, 0)).ok());
  const std::string path = tmp("zero_scale.safetensors");
  ASSERT_TRUE(edited->save(path).ok());
  std::unique_ptr<CompiledModel> m = make(weft_aot::MlpF16::table());
  ASSERT_TRUE(m);
  StatusOr<LoadReport> r = m->load(path, /*partial=*/false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            path + ": error: 'loss_scale' is 0 in the checkpoint; a loss scale must be a finite number > 0 "
                   "(GradScaler's initial scale is 65536); nothing was loaded");
  EXPECT_EQ((*m->loss_scale())->scale, 65536);
  ASSERT_TRUE(edited->set_value("loss_scale", Tensor::scalar(DType::f32, 1024)).ok());
  ASSERT_TRUE(edited->set_value("skipped_steps", Tensor::scalar(DType::i64, -3)).ok());
  ASSERT_TRUE(edited->save(path).ok());
  r = m->load(path, /*partial=*/true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("'skipped_steps' is -3 in the checkpoint; a count of steps must be >= 0"),
            std::string::npos);
}

// --check-numerics on an AOT model: its Program carries no kernel bodies, so an inf made
// inside a generated kernel (f16's cast of 1e30) names that kernel; it used to fail with
// the interpreter's "graph @main takes 0 inputs, but 1 were given".
TEST(AotPrecision, CheckNumericsNamesAKernelWithoutItsBody) {
  std::unique_ptr<CompiledModel> m = make(weft_aot::MlpF16::table());
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->set_check_numerics(true).ok());
  std::vector<Tensor> big = batch(*m, 1);
  for (int64_t i = 0; i < big[0].numel(); ++i) big[0].data<float>()[i] = 1e30f;
  StatusOr<double> loss = m->step(big);
  ASSERT_FALSE(loss.ok());
  const std::string text = loss.error().to_string();
  EXPECT_NE(text.find("check-numerics: "), std::string::npos) << text;
  EXPECT_NE(text.find(" produced inf"), std::string::npos) << text;
  EXPECT_EQ(text.find("inputs, but"), std::string::npos) << text;
}

}  // namespace precision_test
}  // namespace
}  // namespace weft::aot
