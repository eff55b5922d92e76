// Writes synthetic_program() (tests/aot/synthetic_program.h) as C++ source, under the
// name `synthetic`: the genrule of program_tables_test runs it at build time.
//
//   write_synthetic_source OUT.cc
#include <cstdio>

#include "codegen/program_source.h"
#include "formats/file_io.h"
#include "tests/aot/synthetic_program.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_synthetic_source OUT.cc\n");
    return 1;
  }
  const std::string source =
      weft::codegen::program_to_cpp(weft::testing::synthetic_program(), "synthetic");
  if (weft::Status s = weft::write_file_atomically(argv[1], source); !s.ok()) {
    std::fprintf(stderr, "write_synthetic_source: %s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}
