#pragma once
// The valid `.wir` graphs the mutation tests start from. Together they use every op in
// ir/ops.def, attributes of every kind, locations with and without builder paths,
// `loc(unknown)`, a quoted value name, param and state inputs, assign, every dtype,
// scalars, declared output types and several outputs. `SeedsAreValid` in
// text_mutation_test.cc keeps them parsing, type-checking and running.

#include <string_view>
#include <vector>

namespace weft::robustness {

struct SeedGraph {
  std::string_view name;  ///< Also the file name used in errors, e.g. "mlp.wir".
  std::string_view text;
};

/// mlp.wir (examples/mlp), convnet.wir, misc.wir, backward.wir.
const std::vector<SeedGraph>& seed_graphs();

}  // namespace weft::robustness
