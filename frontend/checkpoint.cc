#include "frontend/checkpoint.h"

#include <numeric>
#include <optional>
#include <sstream>

#include "autodiff/loss_scale.h"
#include "ir/text_util.h"

namespace weft {
namespace {

constexpr const char* kOptOut = "; nothing was loaded (to load by names and shapes alone, set "
                                "LoadOptions::by_names_and_shapes)";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trimmed(const std::string& line) {
  const size_t start = line.find_first_not_of(' ');
  return start == std::string::npos ? "" : line.substr(start);
}

// A line of Model::structure that begins one of the subgraph's nodes: a statement at the
// top level (two spaces in), not a body's closing `})` nor the final `return`.
bool begins_node(const std::string& line) {
  return line.size() > 2 && line.compare(0, 2, "  ") == 0 && line[2] != ' ' && line[2] != '}' &&
         line.compare(2, 6, "return") != 0;
}

bool ends_subgraph(const std::vector<std::string>& lines, size_t i) {
  return i >= lines.size() || lines[i].compare(0, 8, "  return") == 0 || lines[i] == "}";
}

// The inputs of a structure's `graph @subgraph(...) -> () {` line: `(...)`.
std::string inputs_of(const std::string& header) {
  const size_t open = header.find('('), close = header.rfind(") -> (");
  return open == std::string::npos || close == std::string::npos ? header : header.substr(open, close - open + 1);
}

// `text` (lines of Model::structure) with the value of every scalar constant (`%7 = full()
// {..., value=1.0000797} : f32[]`) as `?`: a constant the builder computed from the batch
// size (batch norm's n/(n-1) over batch x height x width, a mean's 1/n) is another number
// at another batch size, and a constant is neither a parameter, a state nor an op.
std::string scalar_constants_blanked(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t value = line.find("value=");
    if (line.find("= full() {") != std::string::npos && value != std::string::npos &&
        line.size() >= 2 && line.compare(line.size() - 2, 2, "[]") == 0) {
      const size_t end = line.find_first_of(",}", value);
      line.replace(value + 6, end == std::string::npos ? std::string::npos : end - value - 6, "?");
    }
    out += line + "\n";
  }
  return out;
}

// Whether the structures `theirs` (the checkpoint's, built for batch `their_batch`) and
// `ours` (for `our_batch`) are the same text but for numbers inside brackets (the dims of
// a type, a shape attribute) that are the checkpoint's batch size in `theirs` where they
// are this model's in `ours`, and for the values of scalar constants
// (scalar_constants_blanked). A parameter's dim that happens to equal the batch size and
// differs slips through here, and is then refused by the load's shape check.
bool same_but_batch(const std::string& their_text, const std::string& our_text, int64_t their_batch,
                    int64_t our_batch) {
  const std::string theirs = scalar_constants_blanked(their_text), ours = scalar_constants_blanked(our_text);
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  int depth = 0;  // brackets open at i (and at j: the texts agree outside numbers)
  while (i < theirs.size() && j < ours.size()) {
    if (depth > 0 && digit(theirs[i]) && digit(ours[j]) && !digit(theirs[i - 1]) &&
        theirs[i - 1] != '%') {
      size_t i_end = i, j_end = j;
      while (i_end < theirs.size() && digit(theirs[i_end])) ++i_end;
      while (j_end < ours.size() && digit(ours[j_end])) ++j_end;
      const std::string a = theirs.substr(i, i_end - i), b = ours.substr(j, j_end - j);
      if (a != b && (a != std::to_string(their_batch) || b != std::to_string(our_batch))) {
        return false;
      }
      i = i_end;
      j = j_end;
      continue;
    }
    if (theirs[i] != ours[j]) return false;
    if (theirs[i] == '[') ++depth;
    if (theirs[i] == ']' && depth > 0) --depth;
    ++i;
    ++j;
  }
  return i == theirs.size() && j == ours.size();
}

// In words, where the structure `theirs` (the checkpoint's) first differs from `ours`
// (Model::structure of `nodes`, this model's subgraph); "" if the texts are equal. Lines
// that differ only in the batch size (both sizes known) count as equal.
// `what` names the text's graph after "the checkpoint's" and "this": "model's subgraph", "model".
std::string first_difference(const Model& model, const std::vector<int>& nodes, const std::string& theirs,
                             const std::string& ours, int64_t their_batch, int64_t our_batch,
                             const std::string& what) {
  const std::vector<std::string> a = lines_of(theirs), b = lines_of(ours);
  auto same = [&](const std::string& x, const std::string& y) {
    return x == y || (their_batch > 0 && our_batch > 0 && their_batch != our_batch &&
                      same_but_batch(x, y, their_batch, our_batch));
  };
  size_t i = 1;
  int node = -1;  // This model's node (index into `nodes`) whose lines hold line i.
  for (; i < a.size() && i < b.size() && same(a[i], b[i]); ++i) {
    if (begins_node(b[i])) ++node;
  }
  if (i < b.size() && begins_node(b[i])) ++node;
  const bool theirs_end = ends_subgraph(a, i), ours_end = ends_subgraph(b, i);
  if (theirs_end && ours_end) {
    if (a.empty() || b.empty() || same(a[0], b[0])) return "";
    return "the checkpoint's model feeds it " + inputs_of(a[0]) + " where this model feeds it " + inputs_of(b[0]);
  }
  std::string text;
  if (theirs_end) {
    text = "the checkpoint's " + what + " ends where this model has `" + trimmed(b[i]) + "`";
  } else if (ours_end) {
    return "the checkpoint's model has `" + trimmed(a[i]) + "` where this " + what + " ends";
  } else {
    text = "the checkpoint's model has `" + trimmed(a[i]) + "` where this model has `" + trimmed(b[i]) + "`";
  }
  if (node >= 0 && node < static_cast<int>(nodes.size())) {
    text += " at " + model.graph().node(nodes[static_cast<size_t>(node)]).loc.to_string();
  }
  return text;
}

// Refuses to load subgraph `path` of `model` from a checkpoint whose `metadata` does not
// show the same structure for it (a structure built for another batch size is the same).
Status check_subgraph(const std::string& file, const Model& model, const std::string& path,
                      const std::map<std::string, std::string>& metadata) {
  auto hash = metadata.find(subgraph_hash_key(path));
  if (hash == metadata.end()) {
    return Error{"the checkpoint has no structural hash for subgraph '" + path + "' (" + subgraph_hash_key(path) +
                     "): it was saved by an older weft, or its model has no such label, so the subgraph "
                     "cannot be checked against this model" + kOptOut,
                 Location::of_file(file)};
  }
  WEFT_ASSIGN_OR_RETURN(std::string ours, model.structure(path));
  const std::string our_hash = structural_hash_hex(fnv1a64(ours));
  if (hash->second == our_hash) return Status();
  auto structure = metadata.find(subgraph_structure_key(path));
  const int64_t their_batch = checkpoint_batch(metadata), our_batch = model_batch(model);
  if (structure != metadata.end() && their_batch > 0 && our_batch > 0 && their_batch != our_batch &&
      same_but_batch(structure->second, ours, their_batch, our_batch)) {
    return Status();
  }
  WEFT_ASSIGN_OR_RETURN(std::vector<int> nodes, model.subgraph(path));
  std::string difference =
      structure == metadata.end()
          ? ""
          : first_difference(model, nodes, structure->second, ours, their_batch, our_batch, "model's subgraph");
  if (difference.empty()) {
    difference = "structural hash " + hash->second + " in the checkpoint, " + our_hash + " for this model";
  }
  return Error{"subgraph '" + path + "' differs from the checkpoint's: " + difference + kOptOut,
               Location::of_file(file)};
}

// For a whole load of a checkpoint whose structural hash differs from `model`'s: nullopt
// when its weft.structure is this model's but for the batch size, else the first
// difference in words ("" when the checkpoint has no weft.structure, saved before it was,
// and no other batch size to name).
std::optional<std::string> architecture_difference(const Model& model,
                                                   const std::map<std::string, std::string>& metadata) {
  auto structure = metadata.find(std::string(kStructureKey));
  const int64_t their_batch = checkpoint_batch(metadata), our_batch = model_batch(model);
  if (structure == metadata.end()) {
    if (their_batch <= 0 || our_batch <= 0 || their_batch == our_batch) return "";
    return "structural hash " + metadata.at(kStructuralHashKey) + " in the checkpoint, " +
           structural_hash_hex(model.structural_hash()) + " for this model, built for batch size " +
           std::to_string(our_batch) + " where the checkpoint's was " + std::to_string(their_batch) +
           "; a checkpoint without " + std::string(kStructureKey) +
           " (written by an AOT binary or an older weft, or rewritten by weftc migrate) resumes at its own batch "
           "size only";
  }
  const std::string ours = *model.structure("");
  if (their_batch > 0 && our_batch > 0 && their_batch != our_batch &&
      same_but_batch(structure->second, ours, their_batch, our_batch)) {
    return std::nullopt;
  }
  std::vector<int> nodes(model.graph().nodes().size());
  std::iota(nodes.begin(), nodes.end(), 0);
  return first_difference(model, nodes, structure->second, ours, their_batch, our_batch, "model");
}

}  // namespace

int64_t model_batch(const Model& model) {
  const Graph& g = model.graph();
  for (const Input& in : g.inputs()) {
    const Type& type = g.type(in.value);
    if (in.kind == InputKind::data && type.shape.rank() >= 1) return type.shape[0];
  }
  return 0;
}

CheckpointSchema checkpoint_schema(const Model& model) {
  CheckpointSchema schema;
  schema.structural_hash = model.structural_hash();
  schema.batch = model_batch(model);
  for (const ParamInfo& p : model.parameters()) {
    schema.params.push_back({p.name, model.graph().type(p.value)});
  }
  for (const std::string& path : model.label_paths()) {
    StatusOr<std::string> structure = model.structure(path);  // A path of the model: it has one.
    schema.subgraphs.push_back({path, fnv1a64(*structure), *structure});
  }
  return schema;
}

Status save_checkpoint(const std::string& path, const Model& model,
                       const std::map<std::string, Tensor>& values, int64_t step) {
  CheckpointSchema schema = checkpoint_schema(model);
  schema.structure = *model.structure("");  // written only here: a load compares it when the hash differs
  return save_checkpoint(path, schema, values, step);
}

StatusOr<LoadReport> load_checkpoint(const std::string& path, const Model& model,
                                     std::map<std::string, Tensor>& values,
                                     const LoadOptions& options) {
  WEFT_RETURN_IF_ERROR(model.validate_path(options.subgraph));
  CheckpointScope scope;
  scope.whole = options.subgraph.empty();
  scope.strict = options.strict;
  // Loss scaling's state: present in an f16 (or scaled) run's checkpoints only.
  scope.optional_keys = {kLossScaleStates.begin(), kLossScaleStates.end()};
  scope.loss_scale = {kLossScaleState, kGrowthTrackerState, kSkippedStepsState};
  if (scope.whole) {
    scope.architecture_difference = [&](const std::map<std::string, std::string>& metadata) {
      return architecture_difference(model, metadata);
    };
  } else {
    WEFT_ASSIGN_OR_RETURN(std::vector<const ParamInfo*> scoped,
                          model.parameters_at(options.subgraph));
    for (const ParamInfo* p : scoped) scope.params.push_back(p->name);
    if (!options.by_names_and_shapes) {
      scope.check_metadata = [&](const std::map<std::string, std::string>& metadata) {
        return check_subgraph(path, model, options.subgraph, metadata);
      };
    }
  }
  return load_checkpoint(path, checkpoint_schema(model), values, scope);
}

}  // namespace weft
