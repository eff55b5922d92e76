#pragma once
// Seeded random mutation of text and bytes, for the robustness tests: every mutant is a
// pure function of (seed, input), so a failure reproduces from the seed printed with it.
//
//   weft::robustness::Mutator m(/*seed=*/42, {"matmul", "f32", "99999999999999999999"});
//   std::string mutant = m.mutate(valid_text);      // 1 to 3 random edits
//   weft::robustness::CrashContext context("seed 42 mutant 7", mutant);
//   ... parse(mutant) ...   // a crash here prints the label and the escaped mutant
//
// Edits are byte-level (delete, duplicate, insert or flip bytes, truncate) and
// token-level (delete, duplicate or swap tokens, replace one with a dictionary entry or
// a nasty number, insert punctuation, deeply nested brackets or a very long name).

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace weft::robustness {

/// `s` as a C++ string literal (quotes included): printable ASCII as is, `\n \t \r \" \\`,
/// every other byte as a three-digit octal escape, so the output can be pasted back.
std::string escape(std::string_view s);

/// The numbers that break naive integer handling: int64 limits and beyond, negatives,
/// -1, zero, huge dims, float specials.
const std::vector<std::string>& nasty_numbers();

class Mutator {
 public:
  Mutator(uint32_t seed, std::vector<std::string> dictionary);

  /// `text` with 1 to 3 random edits.
  std::string mutate(std::string_view text);
  /// One random edit of `text`, in place.
  void mutate_once(std::string& text);

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[uniform(0, static_cast<int>(items.size()) - 1)];
  }

 private:
  struct Span {
    size_t begin, end;
  };
  /// Words (names, numbers, `%name`), quoted strings and single punctuation bytes.
  static std::vector<Span> tokens(std::string_view text);
  size_t position(const std::string& text) {
    return static_cast<size_t>(uniform(0, static_cast<int>(text.size())));
  }

  std::mt19937 rng_;
  std::vector<std::string> dictionary_;
};

/// While alive, a fatal signal (SIGSEGV, SIGABRT from a failed WEFT_CHECK or
/// std::terminate, SIGBUS, SIGFPE, SIGILL) or a sanitizer's death prints `label` and the
/// escaped input to stderr before the process dies, so that the crashing mutant can be
/// copied into a regression test. Not reentrant: one context at a time.
class CrashContext {
 public:
  CrashContext(std::string_view label, std::string_view input);
  ~CrashContext();
  CrashContext(const CrashContext&) = delete;
  CrashContext& operator=(const CrashContext&) = delete;
};

}  // namespace weft::robustness
