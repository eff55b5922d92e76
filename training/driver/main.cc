// main() of a training binary: the driver, training the model that the binary's generated
// source (or a test's adapter) defines with make_compiled_model (trainable.h), with Open
// MPI or Gloo for --data-parallel (runtime/collective/world.h), and NCCL over them where
// the model was compiled for cuda (its backend's communicator_for).
#include "runtime/collective/world.h"
#include "training/driver/driver.h"

namespace weft::driver {

int run_driver(int argc, char** argv) {
  return run_driver(argc, argv, make_compiled_model,
                    {.backend = compiled_model_backend(),
                     .precision = compiled_model_precision(),
                     .launched_by_a_launcher = collective::launched_by_a_launcher,
                     .world_from_environment = collective::world_from_environment,
                     .local_rank = collective::local_rank});
}

}  // namespace weft::driver

int main(int argc, char** argv) { return weft::driver::run_driver(argc, argv); }
