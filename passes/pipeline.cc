#include "passes/pipeline.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ir/dot.h"
#include "ir/json.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/canonicalize.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/fold_constants.h"
#include "passes/infer_types.h"

namespace weft {

bool verify_between_passes_by_default() {
#ifdef WEFT_DEBUG
  return true;
#else
  return std::getenv("WEFT_TEST") != nullptr;
#endif
}

// The standard pipeline, in the order data flows through it.
Pipeline default_pipeline(PipelineOptions options) {
  Pipeline p(std::move(options));
  // Every value gets its static type first; declared types are checked against the
  // shape rules, so a wrong `: f32[...]` annotation is reported here.
  p.add(std::make_unique<InferTypesPass>());
  // Drop computations that return an operand unchanged (x·1, transpose of transpose,
  // ...), bit for bit, then evaluate what is left whose operands are uniform constants.
  // Both keep every type, so infer-types need not run again.
  p.add(std::make_unique<CanonicalizePass>());
  p.add(std::make_unique<FoldConstantsPass>());
  // Drop what reaches neither an output nor an assign (including what the two passes
  // above left dead) ...
  p.add(std::make_unique<DcePass>());
  // ... then merge identical computations. CSE keeps every type and leaves no dead node
  // behind, so neither a second infer-types nor a second dce is needed after it; a pass
  // that creates untyped nodes is followed by infer-types again.
  p.add(std::make_unique<CsePass>());
  return p;
}

Pipeline::Pipeline(PipelineOptions options) : options_(std::move(options)) {}

Pipeline& Pipeline::add(std::unique_ptr<Pass> pass) {
  for (std::string_view name : pass_names()) {
    WEFT_CHECK(name != pass->name(), "pass " + std::string(name) + " added twice");
  }
  passes_.push_back(std::move(pass));
  return *this;
}

Error unknown_pass_error(std::string_view name, const std::vector<std::string_view>& known) {
  std::string list;
  for (std::string_view n : known) list += (list.empty() ? "" : ", ") + std::string(n);
  return Error{"unknown pass '" + std::string(name) + "'; known passes: " + list, {}};
}

std::vector<std::string_view> Pipeline::pass_names() const {
  std::vector<std::string_view> names;
  for (const auto& p : passes_) names.push_back(p->name());
  return names;
}

StatusOr<bool> Pipeline::run(Graph& g) { return run_until(g, options_.after); }

StatusOr<bool> Pipeline::run_until(Graph& g, std::string_view last) {
  // An unknown stopping point is an error before anything runs.
  size_t end = passes_.size();
  if (!last.empty()) {
    std::vector<std::string_view> names = pass_names();
    auto it = std::find(names.begin(), names.end(), last);
    if (it == names.end()) return unknown_pass_error(last, names);
    end = static_cast<size_t>(it - names.begin()) + 1;
  }

  WEFT_RETURN_IF_ERROR(verify(g, VerifyOptions{.check_types = false}));
  bool changed = false;
  for (size_t i = 0; i < end; ++i) {
    Pass& pass = *passes_[i];
    WEFT_ASSIGN_OR_RETURN(bool pass_changed, pass.run(g));
    changed = changed || pass_changed;
    // Dump before verifying, so that IR a pass broke can be inspected.
    if (!options_.dump_dir.empty()) WEFT_RETURN_IF_ERROR(dump(g, i, pass.name()));
    if (options_.verify_each) {
      Status ok = verify(g);
      if (!ok.ok()) {
        return Error{"invalid IR after pass '" + std::string(pass.name()) +
                         "' (a bug in that pass): " + ok.error().message,
                     ok.error().loc};
      }
    }
  }
  return changed;
}

Status Pipeline::dump(const Graph& g, size_t index, std::string_view pass) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options_.dump_dir, ec);
  char prefix[16];
  std::snprintf(prefix, sizeof(prefix), "%02zu-", index + 1);
  const fs::path stem = fs::path(options_.dump_dir) / (prefix + std::string(pass));
  const std::pair<const char*, std::string> files[] = {
      {".wir", options_.print ? options_.print(g) : print_graph(g)},
      {".json", graph_to_json(g)},
      {".dot", graph_to_dot(g)},
  };
  for (const auto& [extension, text] : files) {
    const fs::path path = stem.string() + extension;
    std::ofstream out(path);
    out << text;
    if (!out) return Error{"cannot write the IR dump " + path.string(), {}};
  }
  return Status();
}

}  // namespace weft
