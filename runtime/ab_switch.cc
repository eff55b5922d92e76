#include "runtime/ab_switch.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace weft {
namespace {

// The variable's value; a value that is neither "0" nor "1" is named on stderr, once per
// variable (`WEFT_PERSISTENT_LOOPS=yes` changed nothing and said nothing).
const char* switch_value(const char* variable, const char* effect) {
  const char* value = std::getenv(variable);
  if (value == nullptr || std::string_view(value) == "0" || std::string_view(value) == "1") return value;
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(variable).second) {
    std::fprintf(stderr, "weft: warning: %s=%s is ignored: %s\n", variable, value, effect);
  }
  return value;
}

}  // namespace

bool switched_off(const char* variable) {
  const char* value = switch_value(variable, "only 0 turns this optimization off (it stays on)");
  return value != nullptr && std::string_view(value) == "0";
}

bool switched_on(const char* variable) {
  const char* value = switch_value(variable, "only 1 turns this opt-in on (it stays off)");
  return value != nullptr && std::string_view(value) == "1";
}

}  // namespace weft
