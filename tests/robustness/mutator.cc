#include "tests/robustness/mutator.h"

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <utility>

// Present when linked with a sanitizer runtime; lets a sanitizer report name the input.
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace weft::robustness {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '%' || c == '@' || c == '-' || c == '+';
}

// Appends the escape of byte `c` to `out` (at most 4 bytes); shared by `escape` and the
// signal handler, so it allocates nothing.
size_t escape_byte(unsigned char c, char* out) {
  switch (c) {
    case '\n': out[0] = '\\'; out[1] = 'n'; return 2;
    case '\t': out[0] = '\\'; out[1] = 't'; return 2;
    case '\r': out[0] = '\\'; out[1] = 'r'; return 2;
    case '"': out[0] = '\\'; out[1] = '"'; return 2;
    case '\\': out[0] = '\\'; out[1] = '\\'; return 2;
    default: break;
  }
  if (c >= 0x20 && c < 0x7f) {
    out[0] = static_cast<char>(c);
    return 1;
  }
  // Octal escapes always take exactly three digits, so a following digit stays literal.
  out[0] = '\\';
  out[1] = static_cast<char>('0' + ((c >> 6) & 7));
  out[2] = static_cast<char>('0' + ((c >> 3) & 7));
  out[3] = static_cast<char>('0' + (c & 7));
  return 4;
}

// The current CrashContext, read by the signal handler.
const char* g_label = nullptr;
size_t g_label_size = 0;
const char* g_input = nullptr;
size_t g_input_size = 0;

void write_all(const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void report_current_input() {
  if (g_input == nullptr) return;
  static const char kHead[] = "\n*** robustness: the process died on ";
  write_all(kHead, sizeof(kHead) - 1);
  write_all(g_label, g_label_size);
  static const char kInput[] = "; input (C++ literal):\n\"";
  write_all(kInput, sizeof(kInput) - 1);
  char buf[4096];
  size_t used = 0;
  for (size_t i = 0; i < g_input_size; ++i) {
    if (used + 4 > sizeof(buf)) {
      write_all(buf, used);
      used = 0;
    }
    used += escape_byte(static_cast<unsigned char>(g_input[i]), buf + used);
  }
  write_all(buf, used);
  write_all("\"\n", 2);
  g_input = nullptr;  // once
}

void on_fatal_signal(int sig) {
  report_current_input();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_handlers_once() {
  static bool installed = [] {
    std::vector<int> signals = {SIGABRT};
#ifndef __SANITIZE_ADDRESS__
    // Under ASan its own handlers report these (with a stack); the death callback below
    // adds the input.
    signals.insert(signals.end(), {SIGSEGV, SIGBUS, SIGFPE, SIGILL});
#endif
    for (int sig : signals) {
      struct sigaction action;
      std::memset(&action, 0, sizeof(action));
      action.sa_handler = on_fatal_signal;
      sigemptyset(&action.sa_mask);
      sigaction(sig, &action, nullptr);
    }
    if (__sanitizer_set_death_callback != nullptr) {
      __sanitizer_set_death_callback(report_current_input);
    }
    return true;
  }();
  (void)installed;
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out = "\"";
  char buf[4];
  for (char c : s) out.append(buf, escape_byte(static_cast<unsigned char>(c), buf));
  return out + "\"";
}

const std::vector<std::string>& nasty_numbers() {
  static const std::vector<std::string> numbers = {
      "99999999999999999999", "-99999999999999999999", "9223372036854775807",
      "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
      "18446744073709551615", "18446744073709551616", "4294967296", "2147483648",
      "2147483647", "-2147483649", "1000000000000", "1000000", "65536", "-1", "-2", "0",
      "1", "-0", "00", "1e999", "-1e999", "1e-999", "1.7976931348623157e308", "5e-324",
      "nan", "inf", "-inf", "+1", "0x10", "1.", ".5", "1e", "1e+", "--1", "1_000"};
  return numbers;
}

Mutator::Mutator(uint32_t seed, std::vector<std::string> dictionary)
    : rng_(seed), dictionary_(std::move(dictionary)) {
  dictionary_.insert(dictionary_.end(), nasty_numbers().begin(), nasty_numbers().end());
}

std::vector<Mutator::Span> Mutator::tokens(std::string_view text) {
  std::vector<Span> out;
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    size_t begin = i++;
    if (c == '"') {
      while (i < text.size() && text[i] != '"' && text[i] != '\n') i += text[i] == '\\' ? 2 : 1;
      i = std::min(i + 1, text.size());
    } else if (is_word_char(c)) {
      while (i < text.size() && is_word_char(text[i])) ++i;
    }
    out.push_back({begin, i});
  }
  return out;
}

std::string Mutator::mutate(std::string_view text) {
  std::string out(text);
  for (int n = uniform(1, 3); n > 0; --n) mutate_once(out);
  return out;
}

void Mutator::mutate_once(std::string& text) {
  static const std::string kPunctuation = "(){}[],:=%@\"#->\\'";
  std::vector<Span> toks = tokens(text);
  auto token = [&]() -> const Span& { return toks[uniform(0, static_cast<int>(toks.size()) - 1)]; };
  const int kind = uniform(0, 13);
  if (toks.empty() && kind >= 4) {
    text.insert(position(text), pick(dictionary_));
    return;
  }
  switch (kind) {
    case 0: {  // delete a byte range
      size_t at = position(text);
      text.erase(at, static_cast<size_t>(uniform(1, 8)));
      return;
    }
    case 1: {  // duplicate a byte range
      size_t at = position(text);
      std::string piece = text.substr(at, static_cast<size_t>(uniform(1, 16)));
      text.insert(at, piece);
      return;
    }
    case 2: {  // insert a random byte (NUL, non-UTF-8 and control bytes included)
      text.insert(position(text), 1, static_cast<char>(uniform(0, 255)));
      return;
    }
    case 3: {  // truncate
      text.resize(position(text));
      return;
    }
    case 4: {  // delete a token
      const Span& s = token();
      text.erase(s.begin, s.end - s.begin);
      return;
    }
    case 5: {  // duplicate a token
      const Span& s = token();
      text.insert(s.end, " " + text.substr(s.begin, s.end - s.begin));
      return;
    }
    case 6: {  // swap two tokens
      Span a = token(), b = token();
      if (a.begin > b.begin) std::swap(a, b);
      if (a.end > b.begin) return;
      std::string ta = text.substr(a.begin, a.end - a.begin);
      std::string tb = text.substr(b.begin, b.end - b.begin);
      text.replace(b.begin, b.end - b.begin, ta);
      text.replace(a.begin, a.end - a.begin, tb);
      return;
    }
    case 7:
    case 8: {  // replace a token with a dictionary entry
      const Span& s = token();
      text.replace(s.begin, s.end - s.begin, pick(dictionary_));
      return;
    }
    case 9: {  // replace a number with a nasty one
      std::vector<Span> numbers;
      for (const Span& s : toks) {
        char c = text[s.begin];
        if ((c >= '0' && c <= '9') || (c == '-' && s.end - s.begin > 1)) numbers.push_back(s);
      }
      if (numbers.empty()) return;
      const Span& s = pick(numbers);
      text.replace(s.begin, s.end - s.begin, pick(nasty_numbers()));
      return;
    }
    case 10: {  // insert punctuation before a token
      const Span& s = token();
      text.insert(s.begin, 1, kPunctuation[static_cast<size_t>(uniform(0, static_cast<int>(kPunctuation.size()) - 1))]);
      return;
    }
    case 11: {  // deeply nested brackets
      static const std::string kOpeners = "([{";
      char c = kOpeners[static_cast<size_t>(uniform(0, 2))];
      int depth = chance(0.5) ? uniform(2, 64) : uniform(1000, 100000);
      text.insert(token().begin, std::string(static_cast<size_t>(depth), c));
      return;
    }
    case 12: {  // a very long name or string
      const Span& s = token();
      std::string stem = text.substr(s.begin, s.end - s.begin);
      size_t length = static_cast<size_t>(chance(0.5) ? uniform(100, 1000) : uniform(10000, 200000));
      text.replace(s.begin, s.end - s.begin, stem + std::string(length, chance(0.5) ? 'a' : '9'));
      return;
    }
    default: {  // flip a bit
      if (text.empty()) return;
      size_t at = static_cast<size_t>(uniform(0, static_cast<int>(text.size()) - 1));
      text[at] = static_cast<char>(text[at] ^ (1 << uniform(0, 7)));
      return;
    }
  }
}

CrashContext::CrashContext(std::string_view label, std::string_view input) {
  install_handlers_once();
  g_label = label.data();
  g_label_size = label.size();
  g_input = input.data();
  g_input_size = input.size();
}

CrashContext::~CrashContext() {
  g_input = nullptr;
  g_label = nullptr;
}

}  // namespace weft::robustness
