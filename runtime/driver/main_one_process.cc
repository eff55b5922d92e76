// main() of a training binary that trains in one process and links no MPI: what
// weft_binary gives a model compiled for cuda, so that the binary starts on a GPU machine
// that has CUDA's libraries but not Open MPI. --data-parallel is a usage error there.
#include <string>
#include <vector>

#include "runtime/driver/driver.h"

namespace weft::driver {

int run_driver(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string program = argc > 0 ? argv[0] : "train";
  const size_t slash = program.rfind('/');
  if (slash != std::string::npos) program = program.substr(slash + 1);
  return run_driver(args, program, make_compiled_model, stdout, stderr,
                    {.backend = compiled_model_backend()});
}

}  // namespace weft::driver

int main(int argc, char** argv) { return weft::driver::run_driver(argc, argv); }
