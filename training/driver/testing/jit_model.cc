// make_compiled_model for the driver's end-to-end tests: the JIT Trainer behind the
// Trainable interface (frontend/jit_trainable.h), linked with //training/driver:main as a
// training binary would link its generated model. $WEFT_DRIVER_TEST_MODEL picks the model:
//   fashion (default)  784-32-10 ReLU MLP, batch 32, eval batch 768 (10000 test images
//                      leave a short last batch of 16), cross-entropy, Adam(1e-3)
//   nchw               the same MLP behind a flatten, on f32[32,1,28,28] images
//   npy-classifier     f32[8,4] -> Linear(4,3), cross-entropy on i64[8], SGD(0.1); eval batch 5
//   npy-regressor      f32[8,3] -> Linear(3,2), MSE on f32[8,2], SGD(0.05); eval batch 5
//   npy-regressor-scaled  the same with loss scaling (init_scale 1024, growth_interval 3)
// $WEFT_DRIVER_TEST_PRECISION (f32 unless set) is the precision the "binary" was built
// for: its compiled_model_precision() and the Trainer's TrainOptions::precision.
#include <cstdlib>
#include <string>

#include "frontend/jit_trainable.h"
#include "frontend/modules.h"
#include "training/flag_values.h"

namespace weft::driver {

std::string compiled_model_backend() { return "cpu"; }  // the JIT Trainer's default

std::string compiled_model_precision() {
  const char* env = std::getenv("WEFT_DRIVER_TEST_PRECISION");
  return env ? env : "f32";
}

StatusOr<std::unique_ptr<Trainable>> make_compiled_model(const ModelOptions& made) {
  const char* env = std::getenv("WEFT_DRIVER_TEST_MODEL");
  const std::string which = env ? env : "fashion";
  TrainOptions options;
  options.seed = made.seed;
  options.bind = made.bind;
  options.precision = parse_precision(compiled_model_precision()).value_or(DType::f32);
  StatusOr<std::unique_ptr<JitTrainable>> model = Error{"unknown WEFT_DRIVER_TEST_MODEL '" + which + "'"};
  if (which == "fashion" || which == "nchw") {
    const bool nchw = which == "nchw";
    FlowBuilder builder = FlowBuilder::from(nchw ? Flatten() : Linear(784, 32));
    if (nchw) builder.through(Linear(784, 32));
    StatusOr<FlowPtr> net = builder.through(ReLU()).through(Linear(32, 10)).build();
    if (!net.ok()) return net.error();
    Shape x = nchw ? Shape{32, 1, 28, 28} : Shape{32, 784};
    model = JitTrainable::compile(*net, {{"x", Type{DType::f32, x}}}, LossSpec::cross_entropy(),
                                  OptimizerSpec::adam(1e-3), options, /*eval_batch=*/768);
  } else if (which == "npy-classifier") {
    StatusOr<FlowPtr> net = FlowBuilder::from(Linear(4, 3)).build();
    if (!net.ok()) return net.error();
    model = JitTrainable::compile(*net, {{"x", Type{DType::f32, {8, 4}}}}, LossSpec::cross_entropy(),
                                  OptimizerSpec::sgd(0.1), options, /*eval_batch=*/5);
  } else if (which == "npy-regressor" || which == "npy-regressor-scaled") {
    if (which == "npy-regressor-scaled") {
      options.loss_scale = {.enabled = true, .init_scale = 1024, .growth_interval = 3};
    }
    StatusOr<FlowPtr> net = FlowBuilder::from(Linear(3, 2)).build();
    if (!net.ok()) return net.error();
    model = JitTrainable::compile(*net, {{"x", Type{DType::f32, {8, 3}}}}, LossSpec::mse(),
                                  OptimizerSpec::sgd(0.05), options, /*eval_batch=*/5);
  }
  if (!model.ok()) return model.error();
  return std::unique_ptr<Trainable>(std::move(*model));
}

}  // namespace weft::driver
