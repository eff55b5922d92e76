#pragma once
// Where an IR node came from: a line:col in a `.wir` file, or a C++ builder call site
// (file:line:col plus the builder path such as `encoder > split[1] > Linear(256->10)`).

#include <string>

namespace weft {

struct Location {
  std::string file;  ///< Source file; empty when unknown.
  int line = 0;      ///< 1-based; 0 when unknown.
  int col = 0;       ///< 1-based; 0 when unknown.
  std::string path;  ///< Builder path, for nodes emitted by the C++ builder.

  /// A location that names only a file (errors about a whole file, e.g. a bad `.npy`).
  static Location of_file(std::string f) {
    Location loc;
    loc.file = std::move(f);
    return loc;
  }

  bool known() const { return !file.empty() || line > 0; }
  /// `file:line:col`, with ` (path)` appended when a builder path is set.
  std::string to_string() const;
  bool operator==(const Location&) const = default;
};

}  // namespace weft
