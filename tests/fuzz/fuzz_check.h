#pragma once
// What every fuzz target asserts beyond "no crash": FUZZ_CHECK aborts with a message
// (libFuzzer then saves the input as crash-*), so an invariant broken by some input is a
// finding exactly like a sanitizer report.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace weft::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "%s:%d: fuzz invariant violated: %s\n", file, line, what.c_str());
  std::abort();
}

/// An error must say what was wrong: a non-empty message.
inline void check_error(const Error& e, const char* file, int line) {
  if (e.message.empty()) fail(file, line, "an error with an empty message");
}

}  // namespace weft::fuzz

#define FUZZ_CHECK(cond, what) \
  do {                         \
    if (!(cond)) ::weft::fuzz::fail(__FILE__, __LINE__, (what)); \
  } while (0)

#define FUZZ_CHECK_ERROR(status_or) \
  ::weft::fuzz::check_error((status_or).error(), __FILE__, __LINE__)
