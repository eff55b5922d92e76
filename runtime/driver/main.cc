// main() of a training binary: the driver, training the model that the binary's generated
// source (or a test's adapter) defines with make_compiled_model (trainable.h), with Open
// MPI for --data-parallel.
#include <string>
#include <vector>

#include "runtime/collective/mpi_communicator.h"
#include "runtime/driver/driver.h"

namespace weft::driver {

int run_driver(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string program = argc > 0 ? argv[0] : "train";
  const size_t slash = program.rfind('/');
  if (slash != std::string::npos) program = program.substr(slash + 1);
  const BinaryInfo info{.backend = compiled_model_backend(),
                        .launched_by_mpi_launcher = collective::launched_by_mpi_launcher,
                        .mpi_world = collective::mpi_world};
  return run_driver(args, program, make_compiled_model, stdout, stderr, info);
}

}  // namespace weft::driver

int main(int argc, char** argv) { return weft::driver::run_driver(argc, argv); }
