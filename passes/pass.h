#pragma once
// The interface every graph-to-graph pass implements. A pass has a kebab-case name (used
// by `--after=NAME`, dump file names and error messages) and a `run` that rewrites the
// graph in place and says whether it changed anything, or returns a user error.
//
//   class MyPass : public Pass {
//    public:
//     std::string_view name() const override { return "my-pass"; }
//     StatusOr<bool> run(Graph& g) override;
//   };
//
// Passes are combined into a Pipeline (passes/pipeline.h), which verifies the graph
// between them in tests and debug builds.

#include <string_view>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft {

class Pass {
 public:
  virtual ~Pass() = default;
  /// Kebab-case and unique within a pipeline: "infer-types", "dce", "cse".
  virtual std::string_view name() const = 0;
  /// Rewrites `g` in place; true when it changed anything.
  virtual StatusOr<bool> run(Graph& g) = 0;
};

}  // namespace weft
