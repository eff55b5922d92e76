#pragma once
// The compile options of an AOT model target (tools/aot/weft.bzl's attributes), as the
// generator's flags, parsed once here for the generator and for the NAME_test /
// NAME_benchmark binaries (which rebuild the same step with the JIT Trainer):
//
//   --batch=128 --dtype=f32 --loss=cross_entropy --optimizer=adam --lr=0.001
//   [--eval_batch=N] [--backend=cpu|cuda|...] [--cpu=native] [--inference_only] [--data_parallel]
//   [--precision=f32|bf16|f16] [--fuse_attention]
//   loss hyper-parameters:      --label_smoothing --class_weight=0.5,2,1 (cross_entropy,
//     nll) --beta (smooth_l1) --delta (huber) --log_input --full --poisson_eps (poisson_nll)
//     --focal_alpha --focal_gamma (sigmoid_focal) --margin (hinge_embedding)
//   optimizer hyper-parameters: --lr --momentum --dampening --nesterov --weight_decay
//     --beta1 --beta2 --eps --amsgrad --alpha --centered --lr_decay
//     --initial_accumulator_value --momentum_decay --max_grad_norm
//     --accumulate_steps --param_groups=PATH[:lr=X][:weight_decay=Y],...
//     --scheduled_momentum=true (the momentum / beta1 a runtime input, weft.momentum, for
//     a schedule that cycles it: OptimizerSpec::with_scheduled_momentum)
// Unset hyper-parameters take PyTorch's defaults for the optimizer (OptimizerSpec's
// static constructors); SGD needs --lr.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frontend/training.h"

namespace weft::aot {

struct CompileOptions {
  int64_t batch = 0;
  DType dtype = DType::f32;
  std::string loss = "cross_entropy";
  std::string optimizer = "adam";
  /// Hyper-parameters given on the command line, by flag name (values as written).
  std::map<std::string, std::string> hyper;
  int64_t eval_batch = 0;  ///< 0: the training batch.
  /// The backend the Programs are compiled for: a compiled target (codegen/targets.h),
  /// whose Target::aot_code says how its kernels travel ("cpu": host object code;
  /// "cuda": one PTX module per Program).
  std::string backend = "cpu";
  /// The host CPU that object code is compiled for (the object form; unused otherwise):
  /// "native" or an LLVM CPU name.
  std::string cpu = "native";
  bool inference_only = false;
  /// The training step holds an all_reduce mean on every gradient and on the loss
  /// (data parallelism under mpirun; weft.bzl's data_parallel).
  bool data_parallel = false;
  /// The step's precision (TrainOptions::precision, passes/autocast.h): f32, or mixed
  /// precision bf16 / f16 (f16 with dynamic loss scaling, autodiff/loss_scale.h).
  DType precision = DType::f32;
  /// The attention pattern fused before autodiff (TrainOptions::fuse_attention,
  /// passes/fuse_attention.h; weft.bzl's fuse_attention).
  bool fuse_attention = false;

  StatusOr<LossSpec> loss_spec() const;
  StatusOr<OptimizerSpec> optimizer_spec() const;
  /// The options as the flags that parse back to them (recorded in the generated table).
  std::string to_flags() const;
};

/// Parses the flags above; an unknown flag or a bad value is an error naming it and
/// listing the flags. Extra flags in `passthrough` (name without dashes) are ignored.
StatusOr<CompileOptions> parse_compile_options(const std::vector<std::string>& args,
                                               const std::vector<std::string>& passthrough = {});

}  // namespace weft::aot
