#pragma once
// What ir/text_test.cc and ir/text_errors_test.cc share: a parse's error as text.

#include <string>
#include <string_view>

#include "ir/text.h"

namespace weft {

/// The error of parsing `text` as "bad.wir", or "ok" if it parses.
inline std::string parse_error(std::string_view text) {
  StatusOr<Graph> g = parse_graph(text, "bad.wir");
  return g.ok() ? "ok" : g.error().to_string();
}

}  // namespace weft
