#include "ir/status.h"

namespace weft {

std::string Location::to_string() const {
  std::string out = file.empty() ? "<unknown>" : file;
  if (line > 0) out += ":" + std::to_string(line) + ":" + std::to_string(col);
  if (!path.empty()) out += " (" + path + ")";
  return out;
}

std::string Error::to_string() const {
  if (!loc.known()) return "error: " + message;
  std::string where = loc.file.empty() ? "<unknown>" : loc.file;
  if (loc.line > 0) where += ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  std::string out = where + ": error: " + message;
  if (!loc.path.empty()) out += " [in " + loc.path + "]";
  return out;
}

void internal_check_failed(const char* file, int line, const char* cond,
                           const std::string& message) {
  std::fprintf(stderr, "weft internal error at %s:%d: check `%s` failed: %s\n", file, line, cond,
               message.c_str());
  std::abort();
}

}  // namespace weft
