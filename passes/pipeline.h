#pragma once
// A pipeline runs passes in order over one graph. Between passes it can run the verifier
// (so a pass that breaks the IR is named right after it runs), stop after a named pass
// (`weftc dump --after=NAME`) and write the IR after each pass to a directory
// (`--dump-dir=DIR`).
//
//   PipelineOptions options;
//   options.dump_dir = "/tmp/ir";
//   Pipeline p = default_pipeline(options);
//   StatusOr<bool> changed = p.run_until(g, "dce");   // infer-types ... dce
//   // wrote /tmp/ir/01-infer-types.wir, 02-canonicalize.wir, 03-fold-constants.wir
//   // and 04-dce.wir
//
// The input graph is always checked structurally first (ir/verifier.h without types), so
// malformed input is a user error rather than a crash inside a pass.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "passes/pass.h"

namespace weft {

/// True in debug builds (WEFT_DEBUG) and under `bazel test` (WEFT_TEST set, see .bazelrc).
bool verify_between_passes_by_default();

struct PipelineOptions {
  /// Run the full verifier (types included) after every pass.
  bool verify_each = verify_between_passes_by_default();
  /// Stop after the pass of this name; empty: run every pass.
  std::string after;
  /// Write the IR after each pass to `DIR/NN-NAME.wir`, `.json` and `.dot` (NN: 1-based
  /// position in the pipeline; XLA's --xla_dump_to); empty: no dumps.
  std::string dump_dir;
  /// Renders the dumped `.wir`; empty: `print_graph` (ir/text.h) with locations.
  std::function<std::string(const Graph&)> print;
};

class Pipeline {
 public:
  explicit Pipeline(PipelineOptions options = {});

  /// Appends a pass; names must be unique within the pipeline.
  Pipeline& add(std::unique_ptr<Pass> pass);
  std::vector<std::string_view> pass_names() const;
  const PipelineOptions& options() const { return options_; }

  /// Runs the passes in order (up to `options().after` if set). True when any pass
  /// changed the graph. Errors: a pass's own error, a verifier error after a pass
  /// (prefixed with the pass's name), an unknown `after` name (listing the known ones),
  /// or a dump file that cannot be written.
  StatusOr<bool> run(Graph& g);
  /// Like `run`, stopping after the pass named `last`.
  StatusOr<bool> run_until(Graph& g, std::string_view last);

 private:
  Status dump(const Graph& g, size_t index, std::string_view pass) const;

  PipelineOptions options_;
  std::vector<std::unique_ptr<Pass>> passes_;
};

/// The error for a stopping point `name` that is none of `known` (listed in order, as
/// `run_until` and weftc's `--after` both report it).
Error unknown_pass_error(std::string_view name, const std::vector<std::string_view>& known);

/// weft's standard optimization pipeline: infer-types, canonicalize, fold-constants, dce,
/// cse.
Pipeline default_pipeline(PipelineOptions options = {});

}  // namespace weft
