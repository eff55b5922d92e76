#pragma once
// The examples that take no flags (cnn, transformer_block): `--help` says what the
// program prints, exit status 0; any other argument is the usage line, exit status 1.
//
//   if (int rc = examples::no_flags(argc, argv, "cnn", "Builds ...\n"); rc >= 0) return rc;

#include <cstdio>
#include <string>

namespace weft::examples {

/// -1 when there are no arguments (the program goes on), else the exit status.
inline int no_flags(int argc, char** argv, const char* program, const char* about) {
  if (argc < 2) return -1;
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf("usage: %s\n%s", program, about);
    return 0;
  }
  std::fprintf(stderr, "usage: %s\n", program);
  return 1;
}

}  // namespace weft::examples
