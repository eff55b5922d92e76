// The compile options of AOT targets: flags round-trip, and every bad flag gives an error
// that names it.
#include "tools/aot/options.h"

#include <gtest/gtest.h>

namespace weft::aot {
namespace {

std::string error_of(const std::vector<std::string>& args) {
  StatusOr<CompileOptions> o = parse_compile_options(args);
  return o.ok() ? "(ok)" : o.error().message;
}

TEST(AotOptions, ParseAndRoundTrip) {
  StatusOr<CompileOptions> o = parse_compile_options(
      {"--batch=128", "--loss=cross_entropy", "--label_smoothing=0.1", "--optimizer=adamw",
       "--lr=3e-4", "--beta2=0.95", "--amsgrad=true", "--eval_batch=500", "--cpu=x86-64-v3",
       "--data_parallel"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->batch, 128);
  EXPECT_TRUE(o->data_parallel);
  EXPECT_FALSE(o->inference_only);
  EXPECT_EQ(o->eval_batch, 500);
  EXPECT_EQ(o->cpu, "x86-64-v3");
  StatusOr<OptimizerSpec> opt = o->optimizer_spec();
  ASSERT_TRUE(opt.ok());
  EXPECT_EQ(opt->describe(),
            "AdamW(lr=0.0003, betas=(0.9, 0.95), eps=1e-08, weight_decay=0.01, amsgrad=True)");
  EXPECT_DOUBLE_EQ(o->loss_spec()->label_smoothing, 0.1);
  std::vector<std::string> again;
  std::string flags = o->to_flags();
  for (size_t b = 0, e; b < flags.size(); b = e + 1) {
    e = flags.find(' ', b);
    if (e == std::string::npos) e = flags.size();
    again.push_back(flags.substr(b, e - b));
  }
  StatusOr<CompileOptions> back = parse_compile_options(again);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->to_flags(), flags);
}

TEST(AotOptions, RadamAndNadamTakePyTorchsDefaultsAndNames) {
  StatusOr<CompileOptions> radam = parse_compile_options({"--batch=8", "--optimizer=radam"});
  ASSERT_TRUE(radam.ok()) << radam.error().to_string();
  EXPECT_EQ(radam->optimizer_spec()->describe(),
            "RAdam(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.0)");
  StatusOr<CompileOptions> nadam = parse_compile_options(
      {"--batch=8", "--optimizer=nadam", "--lr=0.01", "--momentum_decay=0.01", "--weight_decay=0.1"});
  ASSERT_TRUE(nadam.ok()) << nadam.error().to_string();
  EXPECT_EQ(nadam->optimizer_spec()->describe(),
            "NAdam(lr=0.01, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.1, momentum_decay=0.01)");
}

TEST(AotOptions, GradientAccumulation) {
  StatusOr<CompileOptions> o =
      parse_compile_options({"--batch=8", "--optimizer=adam", "--accumulate_steps=4"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->optimizer_spec()->accumulate_steps, 4);
  StatusOr<CompileOptions> scheduled =
      parse_compile_options({"--batch=8", "--optimizer=sgd", "--lr=0.1", "--momentum=0.9", "--scheduled_momentum=true"});
  ASSERT_TRUE(scheduled.ok()) << scheduled.error().to_string();
  EXPECT_TRUE(scheduled->optimizer_spec()->scheduled_momentum);
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=nadam", "--scheduled_momentum=true"}),
            "scheduled_momentum: NAdam reads β1 through its own mu schedule; SGD and RMSprop take a "
            "scheduled momentum, Adam, AdamW and RAdam a scheduled β1");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=adam", "--accumulate_steps=0"}),
            "Invalid accumulate_steps value: 0 (the update is taken every accumulate_steps "
            "steps; 1 takes it every step)");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=adam", "--accumulate_steps=2.5"}),
            "--accumulate_steps=2.5: not an integer");
}

TEST(AotOptions, ParameterGroups) {
  StatusOr<CompileOptions> o = parse_compile_options(
      {"--batch=8", "--optimizer=adamw", "--param_groups=encoder:lr=1e-4:weight_decay=0,head:lr=0.01"});
  ASSERT_TRUE(o.ok()) << o.error().to_string();
  EXPECT_EQ(o->optimizer_spec()->describe(),
            "AdamW(lr=0.001, betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01, amsgrad=False, "
            "groups=[encoder(lr=0.0001, weight_decay=0.0), head(lr=0.01)])");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=adam", "--param_groups=encoder:momentum=0.9"}),
            "--param_groups=encoder:momentum=0.9: group 'encoder' has 'momentum=0.9'; a group takes "
            "lr=X and weight_decay=Y (PATH:lr=X:weight_decay=Y, groups separated by commas)");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=adam", "--param_groups=encoder:lr=fast"}),
            "--param_groups=encoder:lr=fast: group 'encoder': --lr=fast: not a number");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=adam", "--param_groups=a,a"}),
            "parameter group 'a' is given twice");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=adam", "--param_groups=encoder:lr=inf"}),
            "--param_groups=encoder:lr=inf: group 'encoder': lr=inf: the learning rate must be finite (a step "
            "with it makes every weight NaN)");
}

// The compiled optimizer's rates go through training/learning_rate.h's check, as every
// rate set after an optimizer is built: an infinite one compiled a model whose every
// step was refused, a negative one was refused with PyTorch's constructor message.
TEST(AotOptions, LearningRatesAreCheckedAsEveryRateIs) {
  const std::string negative =
      ": the learning rate must be >= 0 (a negative one makes the optimizer climb the loss; 0 leaves the "
      "weights as they are)";
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=sgd", "--lr=-0.5"}), "--lr=-0.5" + negative);
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=adam", "--lr=inf"}),
            "--lr=inf: the learning rate must be finite (a step with it makes every weight NaN)");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=adam", "--param_groups=head:lr=-1e-3"}),
            "--param_groups=head:lr=-1e-3: group 'head': lr=-1e-3" + negative);
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=sgd", "--lr=0", "--param_groups=head:lr=0"}), "(ok)");
}

/// The LossSpec of `args` (with --batch=8), or a failed expectation.
LossSpec loss_of(std::vector<std::string> args) {
  args.push_back("--batch=8");
  StatusOr<CompileOptions> o = parse_compile_options(args);
  EXPECT_TRUE(o.ok()) << o.error().to_string();
  if (!o.ok()) return {};
  StatusOr<LossSpec> l = o->loss_spec();
  EXPECT_TRUE(l.ok()) << l.error().to_string();
  return l.ok() ? *l : LossSpec{};
}

std::string loss_error(std::vector<std::string> args) {
  args.push_back("--batch=8");
  StatusOr<CompileOptions> o = parse_compile_options(args);
  if (!o.ok()) return o.error().message;
  StatusOr<LossSpec> l = o->loss_spec();
  return l.ok() ? "(ok)" : l.error().message;
}

TEST(AotOptions, EveryLossKindByName) {
  using K = LossSpec::Kind;
  const std::pair<const char*, K> names[] = {
      {"cross_entropy", K::CrossEntropy}, {"nll", K::Nll},     {"mse", K::Mse},
      {"l1", K::L1},                      {"smooth_l1", K::SmoothL1}, {"huber", K::Huber},
      {"poisson_nll", K::PoissonNll},     {"bce", K::Bce},     {"bce_with_logits", K::BceWithLogits},
      {"kl_div", K::KlDiv},               {"sigmoid_focal", K::SigmoidFocal},
      {"hinge_embedding", K::HingeEmbedding}};
  for (auto [name, kind] : names) {
    EXPECT_EQ(loss_of({std::string("--loss=") + name}).kind, kind) << name;
  }
}

TEST(AotOptions, LossHyperParameters) {
  EXPECT_DOUBLE_EQ(loss_of({"--loss=huber", "--delta=0.5"}).delta, 0.5);
  LossSpec focal = loss_of({"--loss=sigmoid_focal", "--focal_alpha=0.5", "--focal_gamma=1"});
  EXPECT_DOUBLE_EQ(focal.focal.alpha, 0.5);
  EXPECT_DOUBLE_EQ(focal.focal.gamma, 1.0);
  EXPECT_DOUBLE_EQ(loss_of({"--loss=hinge_embedding", "--margin=0.5"}).margin, 0.5);
  EXPECT_DOUBLE_EQ(loss_of({"--loss=smooth_l1", "--beta=2"}).beta, 2.0);
  LossSpec poisson =
      loss_of({"--loss=poisson_nll", "--log_input=false", "--full=true", "--poisson_eps=1e-3"});
  EXPECT_FALSE(poisson.poisson.log_input);
  EXPECT_TRUE(poisson.poisson.full);
  EXPECT_DOUBLE_EQ(poisson.poisson.eps, 1e-3);
  EXPECT_EQ(loss_of({"--loss=nll", "--class_weight=0.5,2,1"}).weight,
            (std::vector<double>{0.5, 2, 1}));
  LossSpec ce = loss_of({"--loss=cross_entropy", "--class_weight=1,3", "--label_smoothing=0.1"});
  EXPECT_EQ(ce.weight, (std::vector<double>{1, 3}));
  EXPECT_DOUBLE_EQ(ce.label_smoothing, 0.1);
}

TEST(AotOptions, LossErrors) {
  EXPECT_EQ(loss_error({"--loss=nll", "--class_weight=0.5,x"}),
            "--class_weight=0.5,x: not a comma-separated list of numbers");
  EXPECT_EQ(loss_error({"--loss=mse", "--class_weight=1,2"}),
            "--class_weight applies to cross_entropy and nll, not to --loss=mse");
  EXPECT_EQ(loss_error({"--loss=huber", "--delta=big"}), "--delta=big: not a number");
  EXPECT_EQ(loss_error({"--loss=poisson_nll", "--full=maybe"}),
            "--full=maybe: not a boolean (true or false)");
  EXPECT_EQ(loss_error({"--loss=focal"}),
            "unknown loss 'focal'; losses: cross_entropy nll mse l1 smooth_l1 huber poisson_nll "
            "bce bce_with_logits kl_div sigmoid_focal hinge_embedding");
}

TEST(AotOptions, Errors) {
  EXPECT_EQ(error_of({"--loss=cross_entropy"}),
            "--batch must be a positive integer (the training batch size)");
  EXPECT_EQ(error_of({"--batch=x"}), "--batch=x: not an integer");
  EXPECT_EQ(error_of({"--batch=8", "--loss=hinge"}),
            "unknown loss 'hinge'; losses: cross_entropy nll mse l1 smooth_l1 huber poisson_nll "
            "bce bce_with_logits kl_div sigmoid_focal hinge_embedding");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=lamb"}),
            "unknown optimizer 'lamb'; optimizers: sgd adam adamw rmsprop adagrad radam nadam");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=nadam", "--momentum_decay=-1"}),
            "Invalid momentum_decay value: -1.0");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=radam", "--beta1=1"}),
            "Invalid beta parameter at index 0: 1.0");
  EXPECT_EQ(error_of({"--batch=8", "--optimizer=sgd"}),
            "optimizer sgd needs --lr (PyTorch's SGD has no default)");
  EXPECT_EQ(error_of({"--batch=8", "--lr=fast"}), "--lr=fast: not a number");
  EXPECT_EQ(error_of({"--batch=8", "--dtype=f8"}), "--dtype=f8: not a dtype (f32 f64 f16 bf16 ...)");
  EXPECT_EQ(error_of({"--batch=8", "--eps=-1"}), "Invalid epsilon value: -1.0");
  EXPECT_EQ(error_of({"--batch=8", "--data_parallel=2"}),
            "--data_parallel=2: not a boolean (true or false)");
  EXPECT_EQ(error_of({"--batch=8", "--nesterov=maybe"}),
            "--nesterov=maybe: not a boolean (true or false)");
  EXPECT_EQ(error_of({"--batch=8", "--epochs=3"}).substr(0, 36), "unknown flag --epochs; flags: --batc");
  EXPECT_EQ(error_of({"--batch=8", "--backend=tpu"}),
            "--backend=tpu: the AOT generator compiles for cpu and cuda");
}

// cuda's steps reduce through NCCL (runtime/cuda/backend.cc's communicator_for).
TEST(AotOptions, DataParallelCompilesForEveryBackendWithCollectives) {
  for (const char* backend : {"--backend=cpu", "--backend=cuda"}) {
    StatusOr<CompileOptions> o = parse_compile_options({"--batch=8", backend, "--data_parallel"});
    ASSERT_TRUE(o.ok()) << o.error().to_string();
    EXPECT_TRUE(o->data_parallel);
  }
}

TEST(AotOptions, BackendRoundTripsAndCpuIsTheDefault) {
  StatusOr<CompileOptions> cpu = parse_compile_options({"--batch=8"});
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->backend, "cpu");
  EXPECT_EQ(cpu->to_flags().find("--backend"), std::string::npos);  // cpu tables unchanged
  StatusOr<CompileOptions> cuda = parse_compile_options({"--batch=8", "--backend=cuda"});
  ASSERT_TRUE(cuda.ok()) << cuda.error().to_string();
  EXPECT_EQ(cuda->backend, "cuda");
  EXPECT_EQ(cuda->to_flags(),
            "--batch=8 --dtype=f32 --loss=cross_entropy --optimizer=adam --backend=cuda --cpu=native");
}

// weft_library's `precision`: the step's TrainOptions::precision, recorded in the table's
// flags only when it is not f32 (f32 tables unchanged).
TEST(AotOptions, PrecisionRoundTripsAndF32IsTheDefault) {
  StatusOr<CompileOptions> f32 = parse_compile_options({"--batch=8"});
  ASSERT_TRUE(f32.ok());
  EXPECT_EQ(f32->precision, DType::f32);
  EXPECT_EQ(f32->to_flags().find("--precision"), std::string::npos);
  for (const char* p : {"bf16", "f16"}) {
    StatusOr<CompileOptions> o = parse_compile_options({"--batch=8", std::string("--precision=") + p});
    ASSERT_TRUE(o.ok()) << o.error().to_string();
    EXPECT_EQ(dtype_name(o->precision), std::string(p));
    EXPECT_EQ(o->to_flags(), "--batch=8 --dtype=f32 --loss=cross_entropy --optimizer=adam --cpu=native "
                             "--precision=" + std::string(p));
  }
  EXPECT_EQ(error_of({"--batch=8", "--precision=f64"}),
            "--precision=f64: a training step runs in f32, or mixed precision with bf16 or f16 "
            "(weft_library's precision: \"f32\", \"bf16\" or \"f16\")");
}

// weft_library's `fuse_attention`: the step's TrainOptions::fuse_attention, recorded in the
// table's flags when on (tables without it unchanged), so that NAME_test's JIT twin fuses too.
TEST(AotOptions, FuseAttentionRoundTripsAndIsOffByDefault) {
  StatusOr<CompileOptions> off = parse_compile_options({"--batch=8"});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->fuse_attention);
  EXPECT_EQ(off->to_flags().find("--fuse_attention"), std::string::npos);
  StatusOr<CompileOptions> on = parse_compile_options({"--batch=8", "--fuse_attention"});
  ASSERT_TRUE(on.ok()) << on.error().to_string();
  EXPECT_TRUE(on->fuse_attention);
  EXPECT_EQ(on->to_flags(),
            "--batch=8 --dtype=f32 --loss=cross_entropy --optimizer=adam --cpu=native --fuse_attention");
  StatusOr<CompileOptions> again = parse_compile_options({"--batch=8", "--cpu=native", "--fuse_attention=true"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->to_flags(), on->to_flags());
  EXPECT_EQ(error_of({"--batch=8", "--fuse_attention=yes"}),
            "--fuse_attention=yes: not a boolean (true or false)");
}

}  // namespace
}  // namespace weft::aot
