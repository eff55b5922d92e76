#pragma once
// Model checkpoints: a model's parameters, state and optimizer slots, saved as one
// safetensors file (formats/safetensors.h) that PyTorch tools can read. The format
// itself lives in formats/checkpoint.h (AOT binaries use it without the frontend); this
// is its Model-level front: the parameter table from the Model, labelled-subgraph loads.
//
//   std::map<std::string, Tensor> values = ...;   // `encoder.0.weight`, `0.running_mean`,
//                                                 // `optimizer.encoder.0.weight.m`, ...
//   WEFT_RETURN_IF_ERROR(save_checkpoint("ckpt.safetensors", model, values, /*step=*/1200));
//   // Later, or in a model that shares the labelled `encoder`:
//   WEFT_ASSIGN_OR_RETURN(LoadReport report,
//                         load_checkpoint("ckpt.safetensors", model, values, {.subgraph = "encoder"}));
//
// Keys are the model's parameter names (`ParamInfo::name`, stable paths), optimizer
// slots `optimizer.<parameter name>.<slot>`, and any other entries the caller keeps in
// `values` (say `optimizer.t`), which belong to the whole model. `__metadata__` holds
//   weft.format_version             "1"
//   weft.structural_hash            Model::structural_hash() as 16 lowercase hex digits
//   weft.step                       the training step, decimal
//   weft.subgraph_hash.<path>       for every label path: Model::structural_hash(path)
//   weft.subgraph_structure.<path>  Model::structure(path), the text hashed
//   weft.structure                  Model::structure(""), the whole model's
//   weft.batch                      model_batch(model)
// plus the checksums that write_safetensors adds. Saving is atomic (a failed save leaves
// the previous file as it was); a failed load leaves `values` exactly as it was:
// everything is read and checked into a staging map first, and committed only when the
// whole load succeeds.
//
// A whole load checks the model's structure: the same hash, or (the model built for another
// batch size: resuming with another --batch) the same weft.structure but where one has the
// checkpoint's batch size and the other this model's, or in a scalar constant's value
// (batch norm's n/(n-1) over the batch). Parameters, state and optimizer slots do not
// depend on the batch size. Any other difference is refused, naming its first line:
//
//   ckpt.safetensors: error: checkpoint is of a different architecture: the checkpoint's
//   model has `%3 = relu(%2) : f32[32,8]` where this model has `%3 = tanh(%2) : f32[64,8]`
//   at model.cc:12:60 (encoder > Tanh); nothing was loaded: on the command line, resume
//   with the model and options the checkpoint was saved with; in C++,
//   to load only a labelled subgraph both models share, set LoadOptions::subgraph
//
// A checkpoint without weft.structure (written by an AOT binary, saved before 2026-12-01, or
// rewritten by weftc migrate) loads
// at its own batch size only, and a refusal names both hashes (and both batch sizes).
//
// A subgraph load checks the
// subgraph's, which depends only on the subgraph's own nodes (ops, attributes, types
// and wiring; not names, not where it sits), so the same encoder in another model loads.
// An encoder with another activation is refused, naming the first difference:
//
//   ckpt.safetensors: error: subgraph 'encoder' differs from the checkpoint's: the
//   checkpoint's model has `%3 = relu(%2) : f32[3,8]` where this model has
//   `%3 = tanh(%2) : f32[3,8]` at model.cc:12:60 (encoder > Tanh); nothing was loaded
//   (to load by names and shapes alone, set LoadOptions::by_names_and_shapes)
//
// Types include the batch size of the shapes the model was built for: a subgraph saved
// from a model built for another batch size differs in its types.

#include <map>
#include <string>

#include "frontend/model.h"
#include "ir/status.h"
#include "formats/checkpoint.h"
#include "runtime/tensor.h"

namespace weft {

/// What to load.
struct LoadOptions {
  /// A label path (`encoder`, `encoder.scan`): load only the parameters inside that
  /// subgraph and their optimizer slots, from a checkpoint of any model that has the same
  /// subgraph (its weft.subgraph_hash.<path> must match Model::structural_hash(path), or
  /// its structure must differ only in the batch size: weft.batch where this model has
  /// its own).
  /// "" loads everything and requires the checkpoint's model to be this one, but for the
  /// batch size (see above).
  std::string subgraph;
  /// Fail when an expected key is missing from the checkpoint, or when the checkpoint
  /// holds a key (in scope) that nothing expects, listing both — as PyTorch's
  /// `load_state_dict(strict=True)` does. The default: resuming is strict. False: a
  /// partial load, which loads what matches and reports the rest in LoadReport.
  bool strict = true;
  /// For a subgraph load: skip the structure check and load by names and shapes alone
  /// (a checkpoint with no hash for the subgraph — from an older weft, an AOT binary or
  /// a model without that label — or one whose subgraph differs on purpose). Whole
  /// loads always check the structural hash.
  bool by_names_and_shapes = false;
};

/// The checkpoint table of `model`: its parameters and state with their types, its
/// structural hash, each labelled subgraph's structure and the batch size (the whole
/// model's structure, weft.structure, is added by save_checkpoint, which writes it).
CheckpointSchema checkpoint_schema(const Model& model);

/// The batch size `model` was built for: dimension 0 of its first data input (0 if none).
int64_t model_batch(const Model& model);

/// Saves `values` for `model` at `path`, atomically. Every parameter and state of the
/// model must be in `values` with the model's type (an error names the key otherwise);
/// other keys are saved as they are.
Status save_checkpoint(const std::string& path, const Model& model,
                       const std::map<std::string, Tensor>& values, int64_t step);

/// Loads the checkpoint at `path` into `values` (see LoadOptions for what is loaded).
/// Errors, each leaving `values` untouched: an unreadable or malformed file; a full load
/// of a checkpoint of another architecture (the first differing line of the structures
/// named, or both hashes where the checkpoint has no weft.structure) or with no hash; an unknown subgraph path; unless `by_names_and_shapes`, a subgraph
/// load from a checkpoint with no hash for that subgraph, or whose subgraph differs (the
/// first difference named); a key whose dtype or shape differs from
/// the model's parameter or from the entry already in `values` (the key and both types
/// named); under `strict` (the default), missing or unexpected keys.
StatusOr<LoadReport> load_checkpoint(const std::string& path, const Model& model,
                                     std::map<std::string, Tensor>& values,
                                     const LoadOptions& options = {});

}  // namespace weft
