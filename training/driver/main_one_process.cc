// main() of a training binary that trains in one process and links no MPI: what
// weft_binary gives a model compiled for cuda without data_parallel, so that the binary
// starts on a GPU machine that has CUDA's libraries but not Open MPI. --data-parallel is a
// usage error there (with data_parallel = True the binary links main.cc: NCCL).
#include "training/driver/driver.h"

namespace weft::driver {

int run_driver(int argc, char** argv) {
  return run_driver(argc, argv, make_compiled_model, {.backend = compiled_model_backend(),
                                                    .precision = compiled_model_precision()});
}

}  // namespace weft::driver

int main(int argc, char** argv) { return weft::driver::run_driver(argc, argv); }
