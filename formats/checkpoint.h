#pragma once
// The checkpoint format, runtime side: parameters, state and optimizer slots as one
// safetensors file (formats/safetensors.h), checked against a parameter table rather
// than a built Model, so that AOT-compiled binaries (training/aot), which have no
// frontend, read and write exactly the checkpoints the Trainer does.
// frontend/checkpoint.h builds the table from a Model and adds labelled-subgraph loads.
//
//   CheckpointSchema schema{{{"0.weight", f32[256,784]}, ...}, /*structural_hash=*/h};
//   WEFT_RETURN_IF_ERROR(save_checkpoint("ckpt.safetensors", schema, values, /*step=*/1200));
//   WEFT_ASSIGN_OR_RETURN(LoadReport report, load_checkpoint("ckpt.safetensors", schema, values));
//
// Keys are the parameter names (stable paths), optimizer slots
// `optimizer.<parameter name>.<slot>`, and any other entries the caller keeps in
// `values`, which belong to the whole model. `__metadata__` holds
//   weft.format_version             "1"
//   weft.structural_hash            the model's structural hash as 16 lowercase hex digits
//   weft.step                       the training step, decimal
//   weft.subgraph_hash.<path>       for each labelled subgraph (CheckpointSchema::subgraphs):
//                                   its structural hash, 16 lowercase hex digits
//   weft.subgraph_structure.<path>  the text that hash is of, one line per node
//                                   (frontend's Model::structure), to name a difference
//   weft.batch                      the batch size the model was built for (dimension 0
//                                   of its first data input; CheckpointSchema::batch), so
//                                   that a subgraph load can tell a batch size apart from
//                                   an architecture
//   weft.structure                  the whole model's structure (CheckpointSchema::structure),
//                                   so that a whole load can do the same (written since
//                                   session 32; older checkpoints load at their own batch)
// plus the checksums of the data and of the metadata that write_safetensors adds, and
// every value is validated on load. Saving is atomic (a failed save leaves the previous
// file as it was); a failed load leaves `values` exactly as it was: everything is read
// and checked into a staging map first, and committed only when the whole load succeeds.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/shape.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft {

/// The checkpoint format version weft writes (and the newest it reads).
inline constexpr int kCheckpointFormatVersion = 1;

/// The most training steps weft counts, 2^53: a step reaches the compiled step graph (its
/// optimizer's bias corrections) through a double, exact up to here. A checkpoint with a
/// larger `weft.step` is refused; a step from here is an error (check_next_step).
inline constexpr int64_t kMaxSteps = int64_t{1} << 53;

/// Ok when a model that has taken `steps` steps may take one more; else the error that
/// Trainer::step and the AOT models return.
Status check_next_step(int64_t steps);

/// What a checkpoint is checked against: the model's parameters and state, in
/// graph-input order, and its architecture's hash (frontend's Model::structural_hash).
struct CheckpointSchema {
  struct Entry {
    std::string name;
    Type type;
  };
  std::vector<Entry> params;
  uint64_t structural_hash = 0;
  /// A labelled subgraph's structure (frontend's Model::structure(path)), saved so that a
  /// later load of that subgraph alone can check it. An AOT binary's schema has its
  /// model's, from the generator (training/aot's ModelTable::subgraphs).
  struct Subgraph {
    std::string path;
    uint64_t hash = 0;
    std::string structure;
  };
  std::vector<Subgraph> subgraphs;
  /// The batch size the model was built for (0: unknown, not written).
  int64_t batch = 0;
  /// The whole model's structure (frontend's Model::structure("")), written as
  /// weft.structure so that a whole load can tell a model built for another batch size
  /// from another architecture, and name the first difference ("": not written).
  std::string structure;
};

/// The `weft.batch` of a checkpoint's metadata; 0 when absent or not a positive integer.
int64_t checkpoint_batch(const std::map<std::string, std::string>& metadata);

/// The metadata keys of a labelled subgraph's hash and structure:
/// `weft.subgraph_hash.<path>`, `weft.subgraph_structure.<path>`.
std::string subgraph_hash_key(const std::string& path);
std::string subgraph_structure_key(const std::string& path);
/// The metadata key of the whole model's structural hash (CheckpointSchema::structural_hash).
inline constexpr const char* kStructuralHashKey = "weft.structural_hash";
/// The metadata key of the whole model's structure (CheckpointSchema::structure).
inline constexpr std::string_view kStructureKey = "weft.structure";

/// The state names of dynamic loss scaling in one model (autodiff/loss_scale.h: the
/// scale, its growth tracker, the skipped-update count); empty names: the model has none.
/// A load's CheckpointScope::loss_scale, and an AOT model's table (training/aot's
/// ModelTable::loss_scale_keys, written by the generator).
struct LossScaleKeys {
  std::string scale, growth_tracker, skipped_steps;

  /// The names that are set (a checkpoint holds them exactly when its run scaled its loss).
  std::set<std::string> names() const;
};

/// Which keys a load is about.
struct CheckpointScope {
  /// True: the whole model; the checkpoint's structural hash must match the schema's
  /// (or `architecture_difference` accept the difference).
  /// False: only `params` (names from the schema) and their optimizer slots, from a
  /// checkpoint of any model that shares them (the whole model's hash is not checked;
  /// `check_metadata` may check the subgraph's).
  bool whole = true;
  std::vector<std::string> params;
  /// Fail when an expected key is missing from the checkpoint or when the checkpoint
  /// holds a key (in scope) that nothing expects, listing both: resuming is strict by
  /// default. False: a partial load, which loads what matches and says in LoadReport
  /// what did not (partial_load_report() words it for a user).
  bool strict = true;
  /// Keys of a training option's state that one run has and another lacks (loss
  /// scaling's scale, growth tracker and skipped count: an f16 run's checkpoint loads into
  /// an f32 run and back): a strict load neither requires them nor refuses them. One the
  /// checkpoint lacks keeps its value in `values`; one nothing expects is skipped.
  std::set<std::string> optional_keys;
  /// Loss scaling's state, as named in this model (empty names: the model has none). When
  /// the checkpoint holds them they are checked before anything is committed: the scale
  /// must be a finite number > 0 and the counts >= 0, or the load is refused (a scale of 0,
  /// NaN or inf makes every later update NaN or skipped: a hand-edited checkpoint).
  LossScaleKeys loss_scale;
  /// How the caller's user loads a labelled subgraph instead, for the hint of a whole
  /// load refused by the structural hash; empty where there is no such option (the AOT
  /// training driver): no hint.
  std::string subgraph_knob = "LoadOptions::subgraph";
  /// When set, called with the file's `__metadata__` once it is validated and before
  /// anything is staged; an error refuses the load, as it is (frontend/checkpoint.cc
  /// checks a labelled subgraph's structure here).
  std::function<Status(const std::map<std::string, std::string>& metadata)> check_metadata;
  /// For a whole load whose structural hash differs from the schema's: how the
  /// checkpoint's model differs, in words, or nullopt when it differs only in what does
  /// not change the checkpoint's keys and types (frontend/checkpoint.cc: the batch size),
  /// and the load goes on. "" or unset: the load is refused naming both hashes.
  std::function<std::optional<std::string>(const std::map<std::string, std::string>& metadata)>
      architecture_difference;
};

/// What a successful load did. All lists are sorted.
struct LoadReport {
  /// Keys written into `values`.
  std::vector<std::string> loaded;
  /// Expected keys that the checkpoint lacks: the in-scope parameters of the model and
  /// the in-scope keys already in `values`. Their values were left as they were.
  std::vector<std::string> missing;
  /// In-scope keys of the checkpoint that nothing expects (neither a parameter, nor an
  /// optimizer slot of one, nor a key of `values`); not loaded.
  std::vector<std::string> unexpected;
  /// Keys of the checkpoint outside the requested scope; ignored.
  std::vector<std::string> skipped;
  /// The checkpoint's `weft.step` (0 when it has none).
  int64_t step = 0;
};

/// Saves `values` at `path`, atomically. Every parameter of `schema` must be in `values`
/// with its type (an error names the key otherwise); other keys are saved as they are.
Status save_checkpoint(const std::string& path, const CheckpointSchema& schema,
                       const std::map<std::string, Tensor>& values, int64_t step);

/// Loads the checkpoint at `path` into `values`. Errors, each leaving `values`
/// untouched: an unreadable or malformed file; a whole load of a checkpoint whose
/// structural hash differs from the schema's (both hashes named, or the difference that
/// `architecture_difference` words; it may accept it) or that has none; a key
/// whose dtype or shape differs from the schema's parameter or from the entry already in
/// `values` (the key and both types named); under `strict`, missing or unexpected keys.
StatusOr<LoadReport> load_checkpoint(const std::string& path, const CheckpointSchema& schema,
                                     std::map<std::string, Tensor>& values,
                                     const CheckpointScope& scope = {});

/// How migrate_checkpoint renames the keys of a checkpoint.
struct KeyMigration {
  /// Explicit renames, old key → new key. A parameter's optimizer slots
  /// (`optimizer.<old>.<slot>`) follow it to `optimizer.<new>.<slot>`. Every old key must
  /// be a key of the checkpoint.
  std::map<std::string, std::string> renames = {};
  /// Prefix rules, old prefix (not empty) → new prefix: a key beginning with the old
  /// prefix, or an optimizer slot `optimizer.<old prefix>...`, has it replaced; the
  /// longest matching old prefix wins, and explicit renames come first. Every rule must
  /// match some key. The labelled-subgraph entries of `__metadata__` follow the rules too:
  /// label `encoder` (its parameters `encoder.*`) under `encoder.` → `backbone.` becomes
  /// `backbone`.
  std::vector<std::pair<std::string, std::string>> prefixes = {};
  /// When set, becomes the checkpoint's weft.structural_hash: the hash of the model the
  /// renamed keys are meant for (a refused whole load names it). Otherwise the hash is
  /// kept, and a whole load into another model is still refused as a different
  /// architecture: load a labelled subgraph instead, or set this. weft.structure (the old
  /// model's text, with the old names) is dropped either way: the migrated checkpoint
  /// loads whole at its own batch size only.
  std::optional<uint64_t> structural_hash = std::nullopt;
};

/// What migrate_checkpoint did: every key it renamed, old → new, in file order.
struct MigrateReport {
  std::vector<std::pair<std::string, std::string>> renamed;
};

/// Reads the checkpoint at `in`, renames its keys by `migration` and writes the result to
/// `out` atomically (`out` may be `in`); data, dtypes, shapes and the other metadata are
/// kept. Errors, each before anything is written: an unreadable or malformed checkpoint;
/// an explicit rename of a key the checkpoint lacks; a prefix rule matching no key; an
/// empty old prefix or new name; two keys renamed onto one name, or onto a key kept.
StatusOr<MigrateReport> migrate_checkpoint(const std::string& in, const std::string& out,
                                           const KeyMigration& migration);

/// What a partial load did, for the user: "loaded 10 key(s); missing (left as they
/// were): a, b; unexpected (ignored): c".
std::string partial_load_report(const LoadReport& report);

/// `hash` as weft.structural_hash spells it: 16 lowercase hex digits.
std::string structural_hash_hex(uint64_t hash);

}  // namespace weft
