#pragma once
// What every fuzz target asserts beyond "no crash": FUZZ_CHECK aborts with a message
// (libFuzzer then saves the input as crash-*), so an invariant broken by some input is a
// finding exactly like a sanitizer report. Also the scratch file through which targets
// whose reader takes a path see their input.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
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

namespace weft::fuzz {

/// Writes the input to `$TMPDIR/NAME.PID` + `extension` (/tmp without TMPDIR) and returns
/// that path, the same for every input of one process, for a target whose reader takes a
/// path; the target removes the file when done.
inline std::string write_scratch_file(std::string_view name, std::string_view extension,
                                      const uint8_t* data, size_t size) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/" +
                           std::string(name) + "." + std::to_string(getpid()) +
                           std::string(extension);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr, "cannot create the scratch file " + path);
  FUZZ_CHECK(std::fwrite(data, 1, size, f) == size, "cannot write the scratch file " + path);
  std::fclose(f);
  return path;
}

}  // namespace weft::fuzz

namespace weft::fuzz {

/// For a target's LLVMFuzzerInitialize: when $WEFT_FUZZ_WRITE_SEED names a path, writes
/// the target's seed input there with `write` and exits (0, or 1 printing the error).
template <typename Write>
void write_seed_if_asked(Write write) {
  const char* seed = std::getenv("WEFT_FUZZ_WRITE_SEED");
  if (seed == nullptr) return;
  Status s = write(std::string(seed));
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.to_string().c_str());
    std::exit(1);
  }
  std::exit(0);
}

}  // namespace weft::fuzz

#define FUZZ_CHECK_ERROR(status_or) \
  ::weft::fuzz::check_error((status_or).error(), __FILE__, __LINE__)
