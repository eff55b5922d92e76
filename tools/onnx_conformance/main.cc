// tools/onnx_conformance: ONNX's backend test data through weft's importer and backends,
// as a table (cli.h says what it prints; README.md how to read it).
#include <iostream>

#include "runtime/out_of_memory.h"
#include "tools/onnx_conformance/cli.h"

int main(int argc, char** argv) {
  return weft::run_guarded("onnx_conformance", [&] {
    using namespace weft::onnx_conformance;
    weft::StatusOr<CliOptions> options = parse_cli({argv + 1, argv + argc});
    if (!options.ok()) {
      std::cerr << options.error().message << "\n";
      return 1;
    }
    if (options->help) {
      std::cout << kHelp;
      return 0;
    }
    return run_cli(*options, std::cout, std::cerr);
  });
}
