#include "formats/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "formats/safetensors.h"

namespace weft {
namespace {

constexpr const char* kVersionKey = "weft.format_version";
constexpr const char* kStepKey = "weft.step";
constexpr std::string_view kSubgraphHashPrefix = "weft.subgraph_hash.";
constexpr std::string_view kBatchKey = "weft.batch";
constexpr std::string_view kSubgraphStructurePrefix = "weft.subgraph_structure.";
constexpr std::string_view kOptimizerPrefix = "optimizer.";

Error file_error(const std::string& file, std::string message) {
  return Error{std::move(message), Location::of_file(file)};
}

// "a, b, c", or the first few and a count.
std::string key_list(const std::vector<std::string>& keys) {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < keys.size() && i < kShown; ++i) out += (i ? ", " : "") + keys[i];
  if (keys.size() > kShown) out += " and " + std::to_string(keys.size() - kShown) + " more";
  return out;
}

std::optional<int64_t> parse_int(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The parameter whose optimizer slot `key` is (`optimizer.<parameter>.<slot>`), among
// the keys of `parameters`; or nullopt. Parameter names hold dots too, so this takes the
// longest parameter name followed by a dot and a non-empty slot.
template <typename Map>
std::optional<std::string> slot_parameter(const std::string& key, const Map& parameters) {
  if (key.compare(0, kOptimizerPrefix.size(), kOptimizerPrefix) != 0) return std::nullopt;
  const std::string rest = key.substr(kOptimizerPrefix.size());
  for (size_t dot = rest.rfind('.'); dot != std::string::npos && dot > 0; dot = rest.rfind('.', dot - 1)) {
    if (dot + 1 == rest.size()) continue;
    if (parameters.count(rest.substr(0, dot))) return rest.substr(0, dot);
  }
  return std::nullopt;
}

// How a key relates to the model: the parameter it belongs to (itself, or the parameter
// whose optimizer slot it is), or none for keys of the whole model.
struct KeyOwner {
  const CheckpointSchema::Entry* param = nullptr;
  bool is_slot = false;
};

class KeyClassifier {
 public:
  explicit KeyClassifier(const CheckpointSchema& schema) {
    for (const CheckpointSchema::Entry& p : schema.params) by_name_[p.name] = &p;
  }

  KeyOwner owner(const std::string& key) const {
    if (auto it = by_name_.find(key); it != by_name_.end()) return {it->second, false};
    if (std::optional<std::string> p = slot_parameter(key, by_name_)) return {by_name_.at(*p), true};
    return {};
  }

 private:
  std::map<std::string, const CheckpointSchema::Entry*> by_name_;
};

// Checks every weft metadata value of the checkpoint at `path`; returns its step (0 when
// it has none).
StatusOr<int64_t> validate_metadata(const std::string& path, const std::map<std::string, std::string>& metadata) {
  auto meta = [&](const char* key) -> const std::string* {
    auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
  };
  if (const std::string* v = meta(kVersionKey)) {
    std::optional<int64_t> version = parse_int(*v);
    if (!version || *version < 1) {
      return file_error(path, "malformed checkpoint: weft.format_version is '" + *v +
                                  "', not a positive integer");
    }
    if (*version > kCheckpointFormatVersion) {
      return file_error(path, "checkpoint format version " + *v + " is newer than this weft reads (" +
                                  std::to_string(kCheckpointFormatVersion) + "); upgrade weft");
    }
  }
  int64_t steps = 0;
  if (const std::string* s = meta(kStepKey)) {
    std::optional<int64_t> step = parse_int(*s);
    if (!step || *step < 0) {
      return file_error(path, "malformed checkpoint: weft.step is '" + *s + "', not a non-negative integer");
    }
    if (*step > kMaxSteps) {
      return file_error(path, "malformed checkpoint: weft.step is " + *s + ", more than 2^53 = " +
                                  std::to_string(kMaxSteps) + ", the most steps weft counts");
    }
    steps = *step;
  }
  for (const auto& [key, h] : metadata) {
    if (key != kStructuralHashKey && key.rfind(kSubgraphHashPrefix, 0) != 0) continue;
    const bool hex = h.size() == 16 && std::all_of(h.begin(), h.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    });
    if (!hex) {
      return file_error(path, "malformed checkpoint: " + key + " is '" + h + "', not 16 lowercase hex digits");
    }
  }
  return steps;
}

}  // namespace

int64_t checkpoint_batch(const std::map<std::string, std::string>& metadata) {
  auto it = metadata.find(std::string(kBatchKey));
  if (it == metadata.end()) return 0;
  int64_t batch = 0;
  const std::string& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), batch);
  return ec == std::errc() && end == text.data() + text.size() && batch > 0 ? batch : 0;
}

std::string subgraph_hash_key(const std::string& path) { return std::string(kSubgraphHashPrefix) + path; }

std::string subgraph_structure_key(const std::string& path) {
  return std::string(kSubgraphStructurePrefix) + path;
}

std::string partial_load_report(const LoadReport& report) {
  std::string text = "loaded " + std::to_string(report.loaded.size()) + " key(s)";
  if (!report.missing.empty()) text += "; missing (left as they were): " + key_list(report.missing);
  if (!report.unexpected.empty()) text += "; unexpected (ignored): " + key_list(report.unexpected);
  return text;
}

std::string structural_hash_hex(uint64_t hash) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

Status save_checkpoint(const std::string& path, const CheckpointSchema& schema,
                       const std::map<std::string, Tensor>& values, int64_t step) {
  if (step < 0 || step > kMaxSteps) {
    return file_error(path, "cannot save checkpoint: step " + std::to_string(step) + " is outside [0, 2^53]");
  }
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::set<std::string> written;
  // Parameters first, in graph-input order, then everything else by key.
  for (const CheckpointSchema::Entry& p : schema.params) {
    const Type& want = p.type;
    auto it = values.find(p.name);
    if (it == values.end()) {
      return file_error(path, "cannot save checkpoint: values have no entry for parameter '" +
                                  p.name + "' (" + want.to_string() +
                                  "); a checkpoint holds every parameter and state of the model");
    }
    if (it->second.type() != want) {
      return file_error(path, "cannot save checkpoint: '" + p.name + "' is " +
                                  it->second.type().to_string() + " in values but " +
                                  want.to_string() + " in the model");
    }
    tensors.emplace_back(p.name, it->second);
    written.insert(p.name);
  }
  for (const auto& [key, t] : values) {
    if (!written.count(key)) tensors.emplace_back(key, t);
  }
  std::map<std::string, std::string> metadata = {
      {kVersionKey, std::to_string(kCheckpointFormatVersion)},
      {kStructuralHashKey, structural_hash_hex(schema.structural_hash)},
      {kStepKey, std::to_string(step)},
  };
  for (const CheckpointSchema::Subgraph& sub : schema.subgraphs) {
    metadata[subgraph_hash_key(sub.path)] = structural_hash_hex(sub.hash);
    metadata[subgraph_structure_key(sub.path)] = sub.structure;
  }
  if (schema.batch > 0) metadata[std::string(kBatchKey)] = std::to_string(schema.batch);
  if (!schema.structure.empty()) metadata[std::string(kStructureKey)] = schema.structure;
  return write_safetensors(path, tensors, metadata);
}

std::set<std::string> LossScaleKeys::names() const {
  std::set<std::string> names = {scale, growth_tracker, skipped_steps};
  names.erase("");
  return names;
}

namespace {

/// The loss-scale state the load would commit: a finite scale > 0 and counts >= 0.
Status check_loss_scale_state(const std::string& path, const std::map<std::string, Tensor>& staged,
                              const LossScaleKeys& keys) {
  auto value = [&](const std::string& key) -> std::optional<double> {
    auto it = staged.find(key);
    if (key.empty() || it == staged.end() || it->second.numel() != 1) return std::nullopt;
    return it->second.get_double(0);
  };
  auto refuse = [&](const std::string& key, double v, const std::string& rule) {
    std::ostringstream text;
    text << v;
    return file_error(path, "'" + key + "' is " + text.str() + " in the checkpoint; " + rule +
                                "; nothing was loaded");
  };
  if (std::optional<double> s = value(keys.scale); s && !(std::isfinite(*s) && *s > 0)) {
    return refuse(keys.scale, *s,
                  "a loss scale must be a finite number > 0 (GradScaler's initial scale is 65536)");
  }
  for (const std::string* key : {&keys.growth_tracker, &keys.skipped_steps}) {
    if (std::optional<double> n = value(*key); n && !(*n >= 0)) {
      return refuse(*key, *n, "a count of steps must be >= 0");
    }
  }
  return Status();
}

}  // namespace

StatusOr<LoadReport> load_checkpoint(const std::string& path, const CheckpointSchema& schema,
                                     std::map<std::string, Tensor>& values,
                                     const CheckpointScope& options) {
  WEFT_ASSIGN_OR_RETURN(SafetensorsFile file, read_safetensors(path));
  const bool whole = options.whole;
  LoadReport report;

  // ---- Metadata: version, step, hashes, and (for a whole-model load) the architecture.
  WEFT_ASSIGN_OR_RETURN(report.step, validate_metadata(path, file.metadata));
  auto meta = [&](const char* key) -> const std::string* {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? nullptr : &it->second;
  };
  if (whole) {
    const std::string ours = structural_hash_hex(schema.structural_hash);
    const std::string* theirs = meta(kStructuralHashKey);
    const std::string& knob = options.subgraph_knob;
    if (theirs == nullptr) {
      return file_error(path, "not a weft checkpoint: __metadata__ has no weft.structural_hash, "
                              "so it cannot be checked against the model" +
                                  (knob.empty() ? std::string()
                                                : "; to load the parameters of a labelled subgraph, set " + knob));
    }
    std::optional<std::string> difference;
    if (*theirs != ours) {
      difference = options.architecture_difference ? options.architecture_difference(file.metadata) : "";
    }
    if (difference) {
      if (difference->empty()) difference = "structural hash " + *theirs + " in the checkpoint, " + ours + " for this model";
      return file_error(path, "checkpoint is of a different architecture: " + *difference +
                                  "; nothing was loaded: on the command line, resume with the model and options "
                                  "the checkpoint was saved with" +
                                  (knob.empty() ? std::string()
                                                : "; in C++, to load only a labelled subgraph both models share, set " + knob));
    }
  }
  if (options.check_metadata) WEFT_RETURN_IF_ERROR(options.check_metadata(file.metadata));

  // ---- Scope: which keys this load is about.
  std::set<std::string> params_in_scope;
  if (whole) {
    for (const CheckpointSchema::Entry& p : schema.params) params_in_scope.insert(p.name);
  } else {
    params_in_scope.insert(options.params.begin(), options.params.end());
  }
  const KeyClassifier classify(schema);
  auto in_scope = [&](const KeyOwner& owner) {
    return whole || (owner.param != nullptr && params_in_scope.count(owner.param->name));
  };
  std::set<std::string> expected(params_in_scope.begin(), params_in_scope.end());
  for (const auto& [key, t] : values) {
    if (in_scope(classify.owner(key))) expected.insert(key);
  }

  // ---- Stage every in-scope key of the file, checking its type.
  std::map<std::string, Tensor> staged;
  for (auto& [key, t] : file.tensors) {
    const KeyOwner owner = classify.owner(key);
    if (!in_scope(owner)) {
      report.skipped.push_back(key);
      continue;
    }
    if (!expected.count(key) && !(owner.param != nullptr && owner.is_slot)) {
      (options.optional_keys.count(key) ? report.skipped : report.unexpected).push_back(key);
      continue;
    }
    const Type* want = nullptr;
    const char* where = "";
    if (owner.param != nullptr && !owner.is_slot) {
      want = &owner.param->type;
      where = "the model";
    } else if (auto it = values.find(key); it != values.end()) {
      want = &it->second.type();
      where = "values";
    } else if (owner.param != nullptr && owner.is_slot) {
      // Every optimizer slot has its parameter's type (optimizer.h).
      want = &owner.param->type;
      where = "the model (the parameter's type)";
    }
    if (want != nullptr && t.type() != *want) {
      return file_error(path, "'" + key + "' is " + t.type().to_string() + " in the checkpoint but " +
                                  want->to_string() + " in " + where + "; nothing was loaded");
    }
    staged.emplace(key, std::move(t));
  }
  for (const std::string& key : expected) {
    if (!staged.count(key) && !options.optional_keys.count(key)) report.missing.push_back(key);
  }
  WEFT_RETURN_IF_ERROR(check_loss_scale_state(path, staged, options.loss_scale));
  std::sort(report.unexpected.begin(), report.unexpected.end());
  std::sort(report.skipped.begin(), report.skipped.end());
  if (options.strict && (!report.missing.empty() || !report.unexpected.empty())) {
    std::string problems;
    if (!report.missing.empty()) {
      problems = "lacks " + std::to_string(report.missing.size()) + " expected key(s): " + key_list(report.missing);
    }
    if (!report.unexpected.empty()) {
      problems += std::string(problems.empty() ? "" : "; it ") + "holds " +
                  std::to_string(report.unexpected.size()) + " unexpected key(s): " + key_list(report.unexpected);
    }
    return file_error(path, "strict load: the checkpoint " + problems +
                                "; nothing was loaded (a partial load loads the keys that match and "
                                "reports the rest)");
  }

  // ---- Commit. Nothing above touched `values`.
  for (auto& [key, t] : staged) {
    report.loaded.push_back(key);
    values.insert_or_assign(key, std::move(t));
  }
  return report;
}

Status check_next_step(int64_t steps) {
  if (steps < kMaxSteps) return Status();
  return Error{"the model has taken " + std::to_string(steps) + " steps, 2^53, the most weft counts; "
               "load a checkpoint with a smaller weft.step"};
}

namespace {

// A checkpoint's new names under a KeyMigration.
class Renamer {
 public:
  explicit Renamer(const KeyMigration& m) : m_(m), used_(m.prefixes.size(), false) {}

  std::string tensor_key(const std::string& key) {
    if (auto it = m_.renames.find(key); it != m_.renames.end()) return it->second;
    if (std::optional<std::string> p = slot_parameter(key, m_.renames)) {
      return std::string(kOptimizerPrefix) + m_.renames.at(*p) + key.substr(kOptimizerPrefix.size() + p->size());
    }
    if (std::optional<std::string> renamed = by_prefix(key, /*count=*/true)) return *renamed;
    if (key.compare(0, kOptimizerPrefix.size(), kOptimizerPrefix) == 0) {
      if (auto renamed = by_prefix(key.substr(kOptimizerPrefix.size()), /*count=*/true)) {
        return std::string(kOptimizerPrefix) + *renamed;
      }
    }
    return key;
  }

  // A label path follows the prefix rules as its parameters' names do (`encoder` as
  // `encoder.`); "" when it would become the whole model.
  std::string label(const std::string& path) {
    std::string renamed = by_prefix(path + ".", /*count=*/false).value_or(path + ".");
    if (!renamed.empty() && renamed.back() == '.') renamed.pop_back();
    return renamed;
  }

  // The first prefix rule that renamed no tensor key, or nullptr.
  const std::pair<std::string, std::string>* unused_rule() const {
    for (size_t i = 0; i < used_.size(); ++i) {
      if (!used_[i]) return &m_.prefixes[i];
    }
    return nullptr;
  }

 private:
  std::optional<std::string> by_prefix(const std::string& s, bool count) {
    size_t best = m_.prefixes.size();
    for (size_t i = 0; i < m_.prefixes.size(); ++i) {
      const std::string& old_prefix = m_.prefixes[i].first;
      if (s.compare(0, old_prefix.size(), old_prefix) != 0) continue;
      if (best == m_.prefixes.size() || old_prefix.size() > m_.prefixes[best].first.size()) best = i;
    }
    if (best == m_.prefixes.size()) return std::nullopt;
    if (count) used_[best] = true;
    return m_.prefixes[best].second + s.substr(m_.prefixes[best].first.size());
  }

  const KeyMigration& m_;
  std::vector<bool> used_;
};

}  // namespace

StatusOr<MigrateReport> migrate_checkpoint(const std::string& in, const std::string& out,
                                           const KeyMigration& migration) {
  auto refuse = [&](const std::string& why) { return file_error(in, "cannot migrate: " + why + "; nothing was written"); };
  for (const auto& [old_prefix, new_prefix] : migration.prefixes) {
    if (old_prefix.empty()) return refuse("a prefix rule needs an old prefix ('" + old_prefix + ":" + new_prefix + "')");
  }
  WEFT_ASSIGN_OR_RETURN(SafetensorsFile file, read_safetensors(in));
  WEFT_RETURN_IF_ERROR(validate_metadata(in, file.metadata).status());
  std::set<std::string> keys;
  for (const auto& [key, t] : file.tensors) keys.insert(key);
  std::vector<std::string> absent;
  for (const auto& [from, to] : migration.renames) {
    if (!keys.count(from)) absent.push_back(from);
  }
  if (!absent.empty()) {
    return refuse("the checkpoint has no key " + key_list(absent) + " to rename");
  }

  Renamer renamer(migration);
  MigrateReport report;
  std::map<std::string, std::string> source_of;  // new name → old
  for (auto& [key, t] : file.tensors) {
    std::string renamed = renamer.tensor_key(key);
    if (renamed.empty()) return refuse("'" + key + "' would be renamed to an empty name");
    auto [it, fresh] = source_of.emplace(renamed, key);
    if (!fresh) {
      const std::string& other = it->second;
      if (other == renamed || key == renamed) {
        return refuse("'" + (other == renamed ? key : other) + "' would become '" + renamed +
                      "', a key the checkpoint keeps");
      }
      return refuse("'" + other + "' and '" + key + "' would both become '" + renamed + "'");
    }
    if (renamed != key) report.renamed.emplace_back(key, renamed);
    key = std::move(renamed);
  }
  if (const auto* rule = renamer.unused_rule()) {
    return refuse("no key of the checkpoint begins with '" + rule->first + "' (prefix rule '" + rule->first +
                  ":" + rule->second + "')");
  }

  std::map<std::string, std::string> metadata;
  for (const auto& [key, value] : file.metadata) {
    if (key == kSafetensorsChecksumKey || key == kSafetensorsMetadataChecksumKey) continue;
    std::string renamed = key, label;
    for (std::string_view prefix : {kSubgraphHashPrefix, kSubgraphStructurePrefix}) {
      if (key.compare(0, prefix.size(), prefix) != 0) continue;
      label = renamer.label(key.substr(prefix.size()));
      // A subgraph that becomes the whole model is checked by weft.structural_hash.
      renamed = label.empty() ? "" : std::string(prefix) + label;
    }
    if (renamed.empty()) continue;
    if (!metadata.emplace(renamed, value).second) {
      return refuse("two labelled subgraphs would both be '" + label + "'");
    }
  }
  // The old model's text, with the old names: a whole load falls back to the hash.
  metadata.erase(std::string(kStructureKey));
  if (migration.structural_hash) metadata[kStructuralHashKey] = structural_hash_hex(*migration.structural_hash);
  WEFT_RETURN_IF_ERROR(write_safetensors(out, file.tensors, metadata));
  return report;
}

}  // namespace weft
