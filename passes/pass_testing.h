#pragma once
// Golden-test helper for passes: IR text in, pass, printed IR out (without locations),
// in the style of XLA's RunAndFilecheckHloRewrite.
//
//   EXPECT_EQ(run_pass_on_text(pass, before), after);

#include <string>
#include <string_view>

#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/pass.h"

namespace weft {

/// Parses `text` (as "test.wir"), runs `pass`, verifies the result and returns it printed
/// without locations, with "(no change)" appended when the pass reported none; or the
/// first error as `Error::to_string()`.
inline std::string run_pass_on_text(Pass& pass, std::string_view text) {
  StatusOr<Graph> g = parse_graph(text, "test.wir");
  if (!g.ok()) return "parse " + g.error().to_string();
  StatusOr<bool> changed = pass.run(*g);
  if (!changed.ok()) return changed.error().to_string();
  if (Status ok = verify(*g); !ok.ok()) return "verify " + ok.to_string();
  return print_graph(*g, PrintOptions{.locations = false}) + (*changed ? "" : "(no change)\n");
}

}  // namespace weft
