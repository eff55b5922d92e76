#include "frontend/checkpoint.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "frontend/flow.h"
#include "frontend/init_params.h"
#include "frontend/modules.h"
#include "ir/text_util.h"
#include "formats/safetensors.h"

namespace weft {
namespace {

using Values = std::map<std::string, Tensor>;

std::string temp_path(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// encoder { 0: Linear(4 -> width), 1: LayerNorm(width) } then a head.
Model model_with(int64_t width, ModulePtr head, ModulePtr extra = Identity(), int64_t batch = 3) {
  auto encoder = FlowBuilder::from(Linear(4, width)).through(LayerNorm(width)).label("encoder").build();
  EXPECT_TRUE(encoder.ok()) << encoder.error().to_string();
  auto model = FlowBuilder::from(*encoder).through(head).through(extra).build({{"x", f32({batch, 4})}});
  EXPECT_TRUE(model.ok()) << model.error().to_string();
  return std::move(*model);
}

Model model_a() { return model_with(8, Linear(8, 2)); }
// Shares the labelled encoder with model_a; the rest differs.
Model model_b() { return model_with(8, Linear(8, 3), ReLU()); }

// The issue's models: encoder { 0: Linear(4 -> 8), 1: `activation`, 2: Linear(8 -> 8) },
// after `before`, then `head`.
Model issue_model(ModulePtr activation, ModulePtr before = Identity(), ModulePtr head = Linear(8, 2),
                  int64_t batch = 3) {
  auto encoder =
      FlowBuilder::from(Linear(4, 8)).through(activation).through(Linear(8, 8)).label("encoder").build();
  EXPECT_TRUE(encoder.ok()) << encoder.error().to_string();
  auto model = FlowBuilder::from(before).through(*encoder).through(head).build({{"x", f32({batch, 4})}});
  EXPECT_TRUE(model.ok()) << model.error().to_string();
  return std::move(*model);
}

// Where the node that `op` emitted in `model`'s encoder came from: `file:line:col (path)`.
// (The last such node.)
std::string location_of(const Model& model, Op op) {
  const std::vector<int> nodes = *model.subgraph("encoder");
  std::string where = "(none)";
  for (int i : nodes) {
    if (model.graph().node(i).op == op) where = model.graph().node(i).loc.to_string();
  }
  return where;
}

// Parameters from `seed`, plus Adam-like slots `m` and `v` for every parameter and a
// global counter.
Values values_for(const Model& model, uint64_t seed, bool with_slots = true) {
  auto params = initialize_parameter_map(model, seed);
  EXPECT_TRUE(params.ok()) << params.error().to_string();
  Values values = *params;
  if (!with_slots) return values;
  for (const ParamInfo& p : model.parameters()) {
    Tensor m = values.at(p.name), v = values.at(p.name);
    for (int64_t i = 0; i < m.numel(); ++i) {
      m.set_double(i, 0.5 * m.get_double(i) + static_cast<double>(seed));
      v.set_double(i, static_cast<double>(i + seed));
    }
    values["optimizer." + p.name + ".m"] = m;
    values["optimizer." + p.name + ".v"] = v;
  }
  values["optimizer.t"] = Tensor::scalar(DType::i64, static_cast<double>(seed));
  return values;
}

std::vector<std::string> keys_of(const Values& values) {
  std::vector<std::string> out;
  for (const auto& [k, v] : values) out.push_back(k);
  return out;
}

void expect_same(const Values& a, const Values& b) {
  ASSERT_EQ(keys_of(a), keys_of(b));
  for (const auto& [k, t] : a) EXPECT_EQ(t, b.at(k)) << k;
}

/// The file at `path` less its checksums, for a test to damage and write again
/// (write_safetensors adds new ones).
SafetensorsFile without_checksum(const std::string& path) {
  StatusOr<SafetensorsFile> file = read_safetensors(path);
  EXPECT_TRUE(file.ok()) << file.error().to_string();
  file->metadata.erase(std::string(kSafetensorsChecksumKey));
  file->metadata.erase(std::string(kSafetensorsMetadataChecksumKey));
  return std::move(*file);
}

// The hint of a refused whole load of a JIT model (formats/checkpoint.cc).
const std::string kWholeHint =
    "; nothing was loaded: on the command line, resume with the model and options the checkpoint was saved "
    "with; in C++, to load only a labelled subgraph both models share, set "
    "LoadOptions::subgraph";

// Where the first (or last) node of `op` in `model` came from: `file:line:col (path)`.
std::string location_in_model(const Model& model, Op op, bool last = false) {
  std::string where = "(none)";
  for (const Node& node : model.graph().nodes()) {
    if (node.op != op) continue;
    where = node.loc.to_string();
    if (!last) break;
  }
  return where;
}

TEST(Checkpoint, RoundTrip) {
  Model model = model_a();
  Values saved = values_for(model, 1);
  const std::string path = temp_path("round_trip.safetensors");
  ASSERT_TRUE(save_checkpoint(path, model, saved, /*step=*/1200).ok());

  Values loaded = values_for(model, 2);
  auto report = load_checkpoint(path, model, loaded, {.subgraph = "", .strict = true});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  expect_same(loaded, saved);
  EXPECT_EQ(report->loaded, keys_of(saved));
  EXPECT_TRUE(report->missing.empty());
  EXPECT_TRUE(report->unexpected.empty());
  EXPECT_TRUE(report->skipped.empty());
  EXPECT_EQ(report->step, 1200);

  // Into an empty map, partially: parameters and their slots are known keys; the global
  // counter is not expected by anything, so it is reported and left out.
  Values fresh;
  report = load_checkpoint(path, model, fresh, {.subgraph = "", .strict = false});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->unexpected, std::vector<std::string>{"optimizer.t"});
  EXPECT_EQ(fresh.size(), saved.size() - 1);
  EXPECT_EQ(fresh.at("optimizer.encoder.0.weight.m"), saved.at("optimizer.encoder.0.weight.m"));
}

TEST(Checkpoint, MetadataAndLayout) {
  Model model = model_a();
  const std::string path = temp_path("metadata.safetensors");
  ASSERT_TRUE(save_checkpoint(path, model, values_for(model, 1), /*step=*/7).ok());
  auto file = read_safetensors(path);
  ASSERT_TRUE(file.ok()) << file.error().to_string();
  EXPECT_EQ(file->metadata.at("weft.format_version"), "1");
  EXPECT_EQ(file->metadata.at("weft.step"), "7");
  EXPECT_EQ(file->metadata.at("weft.structural_hash"), structural_hash_hex(model.structural_hash()));
  EXPECT_EQ(file->metadata.at("weft.structural_hash").size(), 16u);
  EXPECT_EQ(file->metadata.count("checksum"), 1u);
  // Each labelled subgraph's structure and its hash.
  EXPECT_EQ(file->metadata.at("weft.subgraph_hash.encoder"),
            structural_hash_hex(*model.structural_hash("encoder")));
  EXPECT_EQ(file->metadata.at("weft.subgraph_structure.encoder"), *model.structure("encoder"));
  EXPECT_EQ(file->metadata.at("weft.structure"), *model.structure(""));
  // Parameters first, in graph-input order.
  EXPECT_EQ(file->tensors[0].first, "encoder.0.weight");
  EXPECT_EQ(file->tensors[0].second.type().to_string(), "f32[8,4]");
}

TEST(Checkpoint, StateAndIntegerDTypesRoundTrip) {
  auto model = FlowBuilder::from(BatchNorm2d(3)).build({{"x", f32({2, 3, 4, 4})}});
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  Values saved = values_for(*model, 3, /*with_slots=*/false);
  ASSERT_EQ(saved.at("0.num_batches_tracked").dtype(), DType::i64);
  saved.at("0.num_batches_tracked") = Tensor::scalar(DType::i64, 41);
  saved.at("0.running_mean").set_double(1, 0.25);
  const std::string path = temp_path("state.safetensors");
  ASSERT_TRUE(save_checkpoint(path, *model, saved, 41).ok());
  Values loaded = values_for(*model, 4, false);
  auto report = load_checkpoint(path, *model, loaded, {.subgraph = "", .strict = true});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  expect_same(loaded, saved);
}

TEST(Checkpoint, SubgraphLoadIntoADifferentModel) {
  Model a = model_a(), b = model_b();
  ASSERT_NE(a.structural_hash(), b.structural_hash());
  Values saved = values_for(a, 1);
  const std::string path = temp_path("subgraph.safetensors");
  ASSERT_TRUE(save_checkpoint(path, a, saved, 5).ok());

  Values target = values_for(b, 2);
  const Values before = target;
  auto report = load_checkpoint(path, b, target, {.subgraph = "encoder", .strict = true});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->loaded,
            (std::vector<std::string>{"encoder.0.bias", "encoder.0.weight", "encoder.1.bias",
                                      "encoder.1.weight", "optimizer.encoder.0.bias.m",
                                      "optimizer.encoder.0.bias.v", "optimizer.encoder.0.weight.m",
                                      "optimizer.encoder.0.weight.v", "optimizer.encoder.1.bias.m",
                                      "optimizer.encoder.1.bias.v", "optimizer.encoder.1.weight.m",
                                      "optimizer.encoder.1.weight.v"}));
  EXPECT_EQ(report->skipped,
            (std::vector<std::string>{"1.bias", "1.weight", "optimizer.1.bias.m", "optimizer.1.bias.v",
                                      "optimizer.1.weight.m", "optimizer.1.weight.v", "optimizer.t"}));
  EXPECT_TRUE(report->missing.empty());
  EXPECT_TRUE(report->unexpected.empty());
  EXPECT_EQ(report->step, 5);
  for (const auto& [key, t] : target) {
    const bool encoder = key.rfind("encoder.", 0) == 0 || key.rfind("optimizer.encoder.", 0) == 0;
    EXPECT_EQ(t, encoder ? saved.at(key) : before.at(key)) << key;
  }
  EXPECT_EQ(keys_of(target), keys_of(before));

  // Loading the whole of a's checkpoint into b is refused: different architectures.
  auto whole = load_checkpoint(path, b, target);
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.error().to_string(),
            path + ": error: checkpoint is of a different architecture: the checkpoint's model has "
                   "`%4 = transpose(%1.weight) {perm=[1, 0]} : f32[8,2]` where this model has "
                   "`%4 = transpose(%1.weight) {perm=[1, 0]} : f32[8,3]` at " +
                location_in_model(b, Op::Transpose, /*last=*/true) + kWholeHint);
}

// Resuming with another --batch: the parameters, optimizer state and step do not depend on
// the batch size, so a checkpoint of the model built for batch 3 loads whole into the same
// model built for batch 5, exactly as it loads at batch 3.
TEST(Checkpoint, WholeLoadAtAnotherBatchSize) {
  Model at3 = model_with(8, Linear(8, 2), Identity(), 3), at5 = model_with(8, Linear(8, 2), Identity(), 5);
  ASSERT_NE(at3.structural_hash(), at5.structural_hash());
  const Values saved = values_for(at3, 1);
  const std::string path = temp_path("batch3.safetensors");
  ASSERT_TRUE(save_checkpoint(path, at3, saved, 1200).ok());
  Values same = values_for(at3, 2), other = values_for(at5, 2);
  auto r3 = load_checkpoint(path, at3, same);
  ASSERT_TRUE(r3.ok()) << r3.error().to_string();
  auto r5 = load_checkpoint(path, at5, other);
  ASSERT_TRUE(r5.ok()) << r5.error().to_string();
  expect_same(other, same);
  expect_same(other, saved);
  EXPECT_EQ(r5->loaded, r3->loaded);
  EXPECT_EQ(r5->step, 1200);
  // And back: batch 5's checkpoint into batch 3.
  const std::string back = temp_path("batch5.safetensors");
  ASSERT_TRUE(save_checkpoint(back, at5, other, 1201).ok());
  Values again = values_for(at3, 3);
  auto r = load_checkpoint(back, at3, again);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  expect_same(again, saved);
}

// Batch norm's state loads at another batch size too, though the model's constants differ:
// its unbiased variance's n/(n-1) is over batch x height x width.
TEST(Checkpoint, BatchNormStateLoadsAtAnotherBatchSize) {
  auto at2 = FlowBuilder::from(BatchNorm2d(3)).build({{"x", f32({2, 3, 4, 4})}});
  auto at6 = FlowBuilder::from(BatchNorm2d(3)).build({{"x", f32({6, 3, 4, 4})}});
  ASSERT_TRUE(at2.ok() && at6.ok());
  ASSERT_NE(at2->structure("").value().find("= full() {"), std::string::npos);
  Values saved = values_for(*at2, 3);
  saved.at("0.running_mean").set_double(1, 0.25);
  const std::string path = temp_path("bn.safetensors");
  ASSERT_TRUE(save_checkpoint(path, *at2, saved, 41).ok());
  Values loaded = values_for(*at6, 4);
  auto r = load_checkpoint(path, *at6, loaded);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  expect_same(loaded, saved);
  EXPECT_EQ(r->step, 41);
}

// At the same batch size a changed scalar constant (batch norm's eps) is named, not
// passed over as a batch-size constant.
TEST(Checkpoint, WholeLoadNamesAChangedConstantAtTheSameBatch) {
  auto saved_model = FlowBuilder::from(BatchNorm2d(3, 1e-5)).build({{"x", f32({2, 3, 4, 4})}});
  auto model = FlowBuilder::from(BatchNorm2d(3, 1e-3)).build({{"x", f32({2, 3, 4, 4})}});
  ASSERT_TRUE(saved_model.ok() && model.ok());
  const std::string path = temp_path("eps.safetensors");
  ASSERT_TRUE(save_checkpoint(path, *saved_model, values_for(*saved_model, 1), 2).ok());
  Values target = values_for(*model, 2);
  auto r = load_checkpoint(path, *model, target);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "checkpoint is of a different architecture: the checkpoint's model has `%19 = full() {dtype=f32, "
            "shape=[], value=1e-05} : f32[]` where this model has `%19 = full() {dtype=f32, shape=[], "
            "value=0.001} : f32[]` at " +
                location_in_model(*model, Op::Full) + kWholeHint);
}

// At another batch size, what changes a parameter or an op is still refused, naming the
// first differing line of the structure and where this model's node came from.
TEST(Checkpoint, WholeLoadAtAnotherBatchRefusesAnotherArchitecture) {
  Model saved_model = model_with(8, Linear(8, 2), Identity(), 3);
  const std::string path = temp_path("arch.safetensors");
  ASSERT_TRUE(save_checkpoint(path, saved_model, values_for(saved_model, 1), 9).ok());
  auto refusal = [&](const Model& model) {
    Values target = values_for(model, 2);
    const Values before = target;
    auto r = load_checkpoint(path, model, target);
    EXPECT_EQ(target, before);
    return r.ok() ? std::string("loaded") : r.error().message;
  };
  // A wider layer.
  Model wider = model_with(16, Linear(16, 2), Identity(), 5);
  EXPECT_EQ(refusal(wider), "checkpoint is of a different architecture: the checkpoint's model has "
                            "`%0 = transpose(%encoder.0.weight) {perm=[1, 0]} : f32[4,8]` where this model has "
                            "`%0 = transpose(%encoder.0.weight) {perm=[1, 0]} : f32[4,16]` at " +
                                location_in_model(wider, Op::Transpose) + kWholeHint);
  // Another op: the issue's encoder with Tanh where the checkpoint's has ReLU.
  Model relu = issue_model(ReLU(), Identity(), Linear(8, 2), 3), tanh = issue_model(Tanh(), Identity(), Linear(8, 2), 5);
  const std::string relu_path = temp_path("relu.safetensors");
  ASSERT_TRUE(save_checkpoint(relu_path, relu, values_for(relu, 1), 9).ok());
  Values target = values_for(tanh, 2);
  auto r = load_checkpoint(relu_path, tanh, target);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "checkpoint is of a different architecture: the checkpoint's model has "
                               "`%3 = relu(%2) : f32[3,8]` where this model has `%3 = tanh(%2) : f32[5,8]` at " +
                                   location_in_model(tanh, Op::Tanh) + kWholeHint);
  // An added layer.
  Model longer = model_with(8, Linear(8, 2), ReLU(), 5);
  EXPECT_EQ(refusal(longer), "checkpoint is of a different architecture: the checkpoint's model ends where "
                             "this model has `%7 = relu(%6) : f32[5,2]` at " +
                                 location_in_model(longer, Op::Relu) + kWholeHint);
}

// A checkpoint saved before weft.structure was written still loads whole at its own batch
// size; at another, the load is refused naming both hashes and both batch sizes.
TEST(Checkpoint, CheckpointWithoutAStructureLoadsAtItsOwnBatch) {
  Model at3 = model_with(8, Linear(8, 2), Identity(), 3), at5 = model_with(8, Linear(8, 2), Identity(), 5);
  const Values saved = values_for(at3, 1);
  const std::string path = temp_path("old.safetensors");
  ASSERT_TRUE(save_checkpoint(path, at3, saved, 4).ok());
  SafetensorsFile file = without_checksum(path);
  ASSERT_EQ(file.metadata.erase(std::string(kStructureKey)), 1u);
  ASSERT_TRUE(write_safetensors(path, file.tensors, file.metadata).ok());
  Values loaded = values_for(at3, 2);
  auto r = load_checkpoint(path, at3, loaded);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  expect_same(loaded, saved);
  EXPECT_EQ(r->step, 4);
  Values other = values_for(at5, 2);
  auto refused = load_checkpoint(path, at5, other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, "checkpoint is of a different architecture: structural hash " +
                                         structural_hash_hex(at3.structural_hash()) + " in the checkpoint, " +
                                         structural_hash_hex(at5.structural_hash()) +
                                         " for this model, built for batch size 5 where the checkpoint's was 3; "
                                         "a checkpoint without weft.structure (written by an AOT binary or an "
                                         "older weft, or rewritten by weftc migrate) resumes at its own batch "
                                         "size only" +
                                         kWholeHint);
}

// Issue 19: a subgraph load checks the subgraph's structure. A ReLU encoder's weights
// used to load "ok" into a Tanh encoder, by names and shapes.
TEST(Checkpoint, SubgraphLoadRefusesADifferentArchitecture) {
  Model relu = issue_model(ReLU()), tanh = issue_model(Tanh());
  const std::string path = temp_path("relu_encoder.safetensors");
  const Values saved = values_for(relu, 1);
  ASSERT_TRUE(save_checkpoint(path, relu, saved, 3).ok());

  Values target = values_for(tanh, 2);
  const Values before = target;
  auto r = load_checkpoint(path, tanh, target, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            path + ": error: subgraph 'encoder' differs from the checkpoint's: the checkpoint's model has "
                   "`%3 = relu(%2) : f32[3,8]` where this model has `%3 = tanh(%2) : f32[3,8]` at " +
                location_of(tanh, Op::Tanh) +
                "; nothing was loaded (to load by names and shapes alone, set "
                "LoadOptions::by_names_and_shapes)");
  EXPECT_NE(location_of(tanh, Op::Tanh).find("frontend/checkpoint_test.cc:"), std::string::npos);
  EXPECT_NE(location_of(tanh, Op::Tanh).find(" (encoder > Tanh)"), std::string::npos);
  expect_same(target, before);

  // Asked for, names and shapes alone load it.
  r = load_checkpoint(path, tanh, target, {.subgraph = "encoder", .by_names_and_shapes = true});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(target.at("encoder.2.weight"), saved.at("encoder.2.weight"));
  EXPECT_EQ(target.at("2.weight"), before.at("2.weight"));
}

// The subgraph's hash depends on its own nodes only: the same encoder after other
// layers, before another head, loads.
TEST(Checkpoint, TheSameSubgraphLoadsAnywhere) {
  Model relu = issue_model(ReLU());
  Model elsewhere = issue_model(ReLU(), /*before=*/Linear(4, 4), /*head=*/Linear(8, 3));
  ASSERT_NE(relu.structural_hash(), elsewhere.structural_hash());
  const std::string path = temp_path("anywhere.safetensors");
  const Values saved = values_for(relu, 1);
  ASSERT_TRUE(save_checkpoint(path, relu, saved, 3).ok());
  Values target = values_for(elsewhere, 2);
  const Values before = target;
  auto r = load_checkpoint(path, elsewhere, target, {.subgraph = "encoder"});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->loaded.size(), 12u);  // 4 parameters, 8 slots.
  for (const auto& [key, t] : target) {
    const bool encoder = key.rfind("encoder.", 0) == 0 || key.rfind("optimizer.encoder.", 0) == 0;
    EXPECT_EQ(t, encoder ? saved.at(key) : before.at(key)) << key;
  }
}

// A subgraph with a node more or less than the checkpoint's: the message says whose ends.
TEST(Checkpoint, SubgraphOfAnotherLengthIsNamedWhereItEnds) {
  Model short_one = issue_model(Identity());
  Model relu = issue_model(ReLU());
  const std::string short_path = temp_path("short.safetensors"), relu_path = temp_path("relu.safetensors");
  ASSERT_TRUE(save_checkpoint(short_path, short_one, values_for(short_one, 1), 0).ok());
  ASSERT_TRUE(save_checkpoint(relu_path, relu, values_for(relu, 1), 0).ok());
  Values values = values_for(relu, 2);
  auto r = load_checkpoint(short_path, relu, values, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "subgraph 'encoder' differs from the checkpoint's: the checkpoint's model has "
            "`%3 = transpose(%in3) {perm=[1, 0]} : f32[8,8]` where this model has `%3 = relu(%2) : "
            "f32[3,8]` at " + location_of(relu, Op::Relu) +
                "; nothing was loaded (to load by names and shapes alone, set "
                "LoadOptions::by_names_and_shapes)");
  // A model whose encoder ends with an extra node.
  auto longer_encoder = FlowBuilder::from(Linear(4, 8)).through(ReLU()).through(Linear(8, 8)).through(ReLU())
                            .label("encoder").build();
  ASSERT_TRUE(longer_encoder.ok());
  auto longer = FlowBuilder::from(*longer_encoder).through(Linear(8, 2)).build({{"x", f32({3, 4})}});
  ASSERT_TRUE(longer.ok());
  Values more = values_for(*longer, 2);
  r = load_checkpoint(relu_path, *longer, more, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());
  const std::string extra_relu = location_of(*longer, Op::Relu);
  EXPECT_EQ(r.error().message,
            "subgraph 'encoder' differs from the checkpoint's: the checkpoint's model's subgraph ends where "
            "this model has `%7 = relu(%6) : f32[3,8]` at " + extra_relu +
                "; nothing was loaded (to load by names and shapes alone, set "
                "LoadOptions::by_names_and_shapes)");
  // And the other way round.
  const std::string longer_path = temp_path("longer.safetensors");
  ASSERT_TRUE(save_checkpoint(longer_path, *longer, values_for(*longer, 1), 0).ok());
  r = load_checkpoint(longer_path, relu, values, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "subgraph 'encoder' differs from the checkpoint's: the checkpoint's model has "
            "`%7 = relu(%6) : f32[3,8]` where this model's subgraph ends; nothing was loaded (to load by "
            "names and shapes alone, set LoadOptions::by_names_and_shapes)");
}

// A checkpoint without the subgraph's hash (older weft, or its model has no such label)
// cannot be checked: refused, saying how to load by names and shapes.
TEST(Checkpoint, SubgraphLoadWithoutAHashIsRefusedUnlessAskedFor) {
  Model relu = issue_model(ReLU());
  const std::string path = temp_path("old.safetensors");
  const Values saved = values_for(relu, 1);
  ASSERT_TRUE(save_checkpoint(path, relu, saved, 3).ok());
  SafetensorsFile file = without_checksum(path);
  file.metadata.erase("weft.subgraph_hash.encoder");
  file.metadata.erase("weft.subgraph_structure.encoder");
  ASSERT_TRUE(write_safetensors(path, file.tensors, file.metadata).ok());

  Values target = values_for(relu, 2);
  const Values before = target;
  auto r = load_checkpoint(path, relu, target, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            path + ": error: the checkpoint has no structural hash for subgraph 'encoder' "
                   "(weft.subgraph_hash.encoder): it was saved by an older weft, or its model has no such "
                   "label, so the subgraph cannot be checked against this model; nothing was loaded (to load "
                   "by names and shapes alone, set LoadOptions::by_names_and_shapes)");
  expect_same(target, before);
  // A whole load does not need it.
  Values whole = values_for(relu, 2);
  ASSERT_TRUE(load_checkpoint(path, relu, whole).ok());
  r = load_checkpoint(path, relu, target, {.subgraph = "encoder", .by_names_and_shapes = true});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(target.at("encoder.0.weight"), saved.at("encoder.0.weight"));
}

// What is said when the checkpoint's structure text does not show where the hashes
// differ: only the inputs differ, or the text is not there.
TEST(Checkpoint, SubgraphDifferenceInInputsOrWithoutAStructure) {
  Model relu = issue_model(ReLU());
  const std::string path = temp_path("edited.safetensors");
  ASSERT_TRUE(save_checkpoint(path, relu, values_for(relu, 1), 3).ok());
  const SafetensorsFile file = without_checksum(path);
  std::map<std::string, std::string> metadata = file.metadata;
  std::string& structure = metadata.at("weft.subgraph_structure.encoder");
  structure.replace(structure.find("%in1: f32[3,4]"), 14, "%in1: f32[3,4] {state}");
  metadata.at("weft.subgraph_hash.encoder") = structural_hash_hex(fnv1a64(structure));
  ASSERT_TRUE(write_safetensors(path, file.tensors, metadata).ok());
  Values target = values_for(relu, 2);
  auto r = load_checkpoint(path, relu, target, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "subgraph 'encoder' differs from the checkpoint's: the checkpoint's model feeds it "
            "(%in0: f32[8,4] {param}, %in1: f32[3,4] {state}, %in2: f32[8] {param}, %in3: f32[8,8] {param}, "
            "%in4: f32[8] {param}) where this model feeds it (%in0: f32[8,4] {param}, %in1: f32[3,4], "
            "%in2: f32[8] {param}, %in3: f32[8,8] {param}, %in4: f32[8] {param}); nothing was loaded (to load "
            "by names and shapes alone, set LoadOptions::by_names_and_shapes)");

  metadata.erase("weft.subgraph_structure.encoder");
  ASSERT_TRUE(write_safetensors(path, file.tensors, metadata).ok());
  r = load_checkpoint(path, relu, target, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "subgraph 'encoder' differs from the checkpoint's: structural hash " +
                metadata.at("weft.subgraph_hash.encoder") + " in the checkpoint, " +
                structural_hash_hex(*relu.structural_hash("encoder")) +
                " for this model; nothing was loaded (to load by names and shapes alone, set "
                "LoadOptions::by_names_and_shapes)");
}

TEST(Checkpoint, UnknownSubgraph) {
  Model a = model_a();
  const std::string path = temp_path("unknown_subgraph.safetensors");
  ASSERT_TRUE(save_checkpoint(path, a, values_for(a, 1), 0).ok());
  Values values;
  auto r = load_checkpoint(path, a, values, {.subgraph = "decoder"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "error: no subgraph labelled 'decoder'; label paths in this model: encoder");
}

TEST(Checkpoint, MissingAndUnexpectedKeys) {
  Model model = model_a();
  // The checkpoint lacks the `v` slots and holds a key nothing expects.
  Values saved = values_for(model, 1);
  for (auto it = saved.begin(); it != saved.end();) {
    it = it->first.size() > 2 && it->first.substr(it->first.size() - 2) == ".v" ? saved.erase(it) : std::next(it);
  }
  saved["extra.counter"] = Tensor::scalar(DType::i32, 3);
  const std::string path = temp_path("missing.safetensors");
  ASSERT_TRUE(save_checkpoint(path, model, saved, 9).ok());

  Values target = values_for(model, 2);
  target.erase("optimizer.t");
  const Values before = target;
  auto strict = load_checkpoint(path, model, target, {.subgraph = "", .strict = true});
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().to_string(),
            path + ": error: strict load: the checkpoint lacks 6 expected key(s): "
                   "optimizer.1.bias.v, optimizer.1.weight.v, optimizer.encoder.0.bias.v, "
                   "optimizer.encoder.0.weight.v, optimizer.encoder.1.bias.v, "
                   "optimizer.encoder.1.weight.v; it holds 2 unexpected key(s): extra.counter, "
                   "optimizer.t; nothing was loaded (a partial load loads the keys that match "
                   "and reports the rest)");
  expect_same(target, before);

  auto report = load_checkpoint(path, model, target, {.subgraph = "", .strict = false});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->missing,
            (std::vector<std::string>{"optimizer.1.bias.v", "optimizer.1.weight.v",
                                      "optimizer.encoder.0.bias.v", "optimizer.encoder.0.weight.v",
                                      "optimizer.encoder.1.bias.v", "optimizer.encoder.1.weight.v"}));
  EXPECT_EQ(report->unexpected, (std::vector<std::string>{"extra.counter", "optimizer.t"}));
  EXPECT_EQ(target.count("extra.counter"), 0u);
  EXPECT_EQ(target.at("optimizer.1.bias.v"), before.at("optimizer.1.bias.v"));  // Kept.
  EXPECT_EQ(target.at("optimizer.1.bias.m"), saved.at("optimizer.1.bias.m"));   // Loaded.

  // Strict also refuses unexpected keys when nothing is missing.
  Values no_v = values_for(model, 2, /*with_slots=*/false);
  auto unexpected = load_checkpoint(path, model, no_v, {.subgraph = "", .strict = true});
  ASSERT_FALSE(unexpected.ok());
  EXPECT_EQ(unexpected.error().message,
            "strict load: the checkpoint holds 2 unexpected key(s): extra.counter, optimizer.t; "
            "nothing was loaded (a partial load loads the keys that match and reports the rest)");
}

// Resuming is strict by default: a checkpoint with no tensors, or with a renamed key, is
// refused with everything missing and extra listed (it used to load nothing, silently).
TEST(Checkpoint, StrictByDefault) {
  Model model = model_a();
  const std::string empty = temp_path("empty.safetensors");
  ASSERT_TRUE(save_checkpoint(empty, model, values_for(model, 1, /*with_slots=*/false), 4).ok());
  const SafetensorsFile file = without_checksum(empty);
  ASSERT_TRUE(write_safetensors(empty, {}, file.metadata).ok());
  Values target = values_for(model, 2, /*with_slots=*/false);
  const Values before = target;
  auto r = load_checkpoint(empty, model, target);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "strict load: the checkpoint lacks 6 expected key(s): 1.bias, 1.weight, encoder.0.bias, "
            "encoder.0.weight, encoder.1.bias, encoder.1.weight; nothing was loaded (a partial load "
            "loads the keys that match and reports the rest)");
  expect_same(target, before);

  std::vector<std::pair<std::string, Tensor>> renamed = file.tensors;
  for (auto& [key, t] : renamed) {
    if (key == "1.bias") key = "head.bias";
  }
  const std::string path = temp_path("renamed.safetensors");
  ASSERT_TRUE(write_safetensors(path, renamed, file.metadata).ok());
  r = load_checkpoint(path, model, target);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "strict load: the checkpoint lacks 1 expected key(s): 1.bias; it holds 1 unexpected "
            "key(s): head.bias; nothing was loaded (a partial load loads the keys that match and "
            "reports the rest)");
  expect_same(target, before);

  // A partial load is asked for, and says what it did.
  r = load_checkpoint(path, model, target, {.subgraph = "", .strict = false});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(partial_load_report(*r),
            "loaded 5 key(s); missing (left as they were): 1.bias; unexpected (ignored): head.bias");
  EXPECT_EQ(target.at("1.bias"), before.at("1.bias"));
}

TEST(Checkpoint, ShapeMismatchLeavesValuesUntouched) {
  Model a = model_a();
  const std::string path = temp_path("shape_mismatch.safetensors");
  ASSERT_TRUE(save_checkpoint(path, a, values_for(a, 1), 3).ok());

  // A model whose encoder is wider: the encoder's keys exist with other shapes.
  Model wide = model_with(6, Linear(6, 2));
  Values target = values_for(wide, 2);
  const Values before = target;
  auto r = load_checkpoint(path, wide, target, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());  // Its structure differs (the types), before any shape is compared.
  EXPECT_EQ(r.error().message.rfind("subgraph 'encoder' differs from the checkpoint's: ", 0), 0u)
      << r.error().message;
  expect_same(target, before);
  r = load_checkpoint(path, wide, target, {.subgraph = "encoder", .by_names_and_shapes = true});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(), path + ": error: 'encoder.0.weight' is f32[8,4] in the checkpoint but "
                                          "f32[6,4] in the model; nothing was loaded");
  expect_same(target, before);

  // A slot already in values with another dtype: named with both types.
  Values slots = values_for(a, 2);
  slots["optimizer.encoder.0.weight.m"] = Tensor(Type{DType::f64, {8, 4}});
  const Values slots_before = slots;
  r = load_checkpoint(path, a, slots);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "'optimizer.encoder.0.weight.m' is f32[8,4] in the checkpoint but "
                               "f64[8,4] in values; nothing was loaded");
  expect_same(slots, slots_before);

  // A slot not in values yet must still have its parameter's type.
  Values with_bad_slot = values_for(a, 1);
  with_bad_slot["optimizer.encoder.0.weight.exp_avg"] = Tensor(Type{DType::f32, {2, 2}});
  const std::string slot_path = temp_path("bad_slot.safetensors");
  ASSERT_TRUE(save_checkpoint(slot_path, a, with_bad_slot, 3).ok());
  Values fresh = values_for(a, 2);
  const Values fresh_before = fresh;
  r = load_checkpoint(slot_path, a, fresh);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "'optimizer.encoder.0.weight.exp_avg' is f32[2,2] in the checkpoint "
                               "but f32[8,4] in the model (the parameter's type); nothing was loaded");
  expect_same(fresh, fresh_before);
}

TEST(Checkpoint, TruncatedFileLeavesValuesUntouched) {
  Model a = model_a();
  const std::string path = temp_path("truncated.safetensors");
  ASSERT_TRUE(save_checkpoint(path, a, values_for(a, 1), 3).ok());
  std::string bytes = slurp(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 100);
  Values target = values_for(a, 2);
  const Values before = target;
  auto r = load_checkpoint(path, a, target);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().loc.file, path);
  EXPECT_NE(r.error().message.find("are out of bounds: the data section has"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("(is the file truncated?)"), std::string::npos);
  expect_same(target, before);
}

TEST(Checkpoint, ForeignFiles) {
  Model a = model_a();
  // A plain safetensors file with the encoder's weights and no weft metadata.
  Values params = values_for(a, 1, false);
  const std::string path = temp_path("foreign.safetensors");
  ASSERT_TRUE(write_safetensors(path, {{"encoder.0.weight", params.at("encoder.0.weight")}}).ok());
  Values target = values_for(a, 2, false);
  auto whole = load_checkpoint(path, a, target);
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.error().message,
            "not a weft checkpoint: __metadata__ has no weft.structural_hash, so it cannot be "
            "checked against the model; to load the parameters of a labelled subgraph, set "
            "LoadOptions::subgraph");
  // Nor can a subgraph be checked: loading by names and shapes is asked for.
  auto unchecked = load_checkpoint(path, a, target, {.subgraph = "encoder", .strict = false});
  ASSERT_FALSE(unchecked.ok());
  EXPECT_EQ(unchecked.error().message.rfind("the checkpoint has no structural hash for subgraph 'encoder'", 0), 0u)
      << unchecked.error().message;
  auto part =
      load_checkpoint(path, a, target, {.subgraph = "encoder", .strict = false, .by_names_and_shapes = true});
  ASSERT_TRUE(part.ok()) << part.error().to_string();
  EXPECT_EQ(part->loaded, std::vector<std::string>{"encoder.0.weight"});
  EXPECT_EQ(part->missing, (std::vector<std::string>{"encoder.0.bias", "encoder.1.bias", "encoder.1.weight"}));
  EXPECT_EQ(part->step, 0);
  EXPECT_EQ(target.at("encoder.0.weight"), params.at("encoder.0.weight"));

  ASSERT_TRUE(write_safetensors(path, {}, {{"weft.format_version", "2"}}).ok());
  auto newer = load_checkpoint(path, a, target, {.subgraph = "encoder"});
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().message, "checkpoint format version 2 is newer than this weft reads (1); upgrade weft");
  ASSERT_TRUE(write_safetensors(path, {}, {{"weft.step", "12x"}}).ok());
  auto bad_step = load_checkpoint(path, a, target, {.subgraph = "encoder"});
  ASSERT_FALSE(bad_step.ok());
  EXPECT_EQ(bad_step.error().message, "malformed checkpoint: weft.step is '12x', not a non-negative integer");
}

// Every metadata value is checked on load, with a user error naming the key: a negative
// weft.step used to load and then abort the AOT driver on an internal check.
TEST(Checkpoint, MalformedMetadataIsAUserErrorNamingTheKey) {
  Model a = model_a();
  const std::string path = temp_path("metadata.safetensors");
  ASSERT_TRUE(save_checkpoint(path, a, values_for(a, 1), 3).ok());
  const SafetensorsFile file = without_checksum(path);
  struct Case {
    const char* key;
    const char* value;
    const char* message;
  };
  const Case cases[] = {
      {"weft.step", "-1", "malformed checkpoint: weft.step is '-1', not a non-negative integer"},
      {"weft.step", "", "malformed checkpoint: weft.step is '', not a non-negative integer"},
      {"weft.step", "99999999999999999999",
       "malformed checkpoint: weft.step is '99999999999999999999', not a non-negative integer"},
      // Found by tests/fuzz:driver_resume_fuzzer: step() then overflowed the count.
      {"weft.step", "9223372036854775807",
       "malformed checkpoint: weft.step is 9223372036854775807, more than 2^53 = 9007199254740992, the "
       "most steps weft counts"},
      {"weft.step", "9007199254740993",
       "malformed checkpoint: weft.step is 9007199254740993, more than 2^53 = 9007199254740992, the "
       "most steps weft counts"},
      {"weft.format_version", "0",
       "malformed checkpoint: weft.format_version is '0', not a positive integer"},
      {"weft.structural_hash", "XYZ",
       "malformed checkpoint: weft.structural_hash is 'XYZ', not 16 lowercase hex digits"},
      {"weft.subgraph_hash.encoder", "0123456789ABCDEF",
       "malformed checkpoint: weft.subgraph_hash.encoder is '0123456789ABCDEF', not 16 lowercase hex "
       "digits"},
  };
  for (const Case& c : cases) {
    std::map<std::string, std::string> metadata = file.metadata;
    metadata[c.key] = c.value;
    ASSERT_TRUE(write_safetensors(path, file.tensors, metadata).ok());
    Values target = values_for(a, 2);
    const Values before = target;
    for (const char* subgraph : {"", "encoder"}) {
      auto r = load_checkpoint(path, a, target, {.subgraph = subgraph});
      ASSERT_FALSE(r.ok()) << c.key << "=" << c.value;
      EXPECT_EQ(r.error().to_string(), path + ": error: " + c.message);
      expect_same(target, before);
    }
  }
}

TEST(Checkpoint, SaveErrors) {
  Model a = model_a();
  const std::string path = temp_path("save_errors.safetensors");
  Values values = values_for(a, 1);
  values.erase("1.bias");
  Status s = save_checkpoint(path, a, values, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().to_string(),
            path + ": error: cannot save checkpoint: values have no entry for parameter '1.bias' "
                   "(f32[2]); a checkpoint holds every parameter and state of the model");
  s = save_checkpoint(path, a, values_for(a, 1), kMaxSteps + 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "cannot save checkpoint: step 9007199254740993 is outside [0, 2^53]");
  values["1.bias"] = Tensor(Type{DType::f32, {3}});
  s = save_checkpoint(path, a, values, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "cannot save checkpoint: '1.bias' is f32[3] in values but f32[2] in the model");
}

TEST(Checkpoint, FailedSaveKeepsTheOldCheckpoint) {
  Model a = model_a();
  const std::string dir = temp_path("atomic");
  mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/ckpt.safetensors";
  ASSERT_TRUE(save_checkpoint(path, a, values_for(a, 1), 1).ok());
  const std::string old = slurp(path);

  // Invalid values: nothing is written.
  Values bad = values_for(a, 2);
  bad["1.bias"] = Tensor(Type{DType::f64, {2}});
  EXPECT_FALSE(save_checkpoint(path, a, bad, 2).ok());
  EXPECT_EQ(slurp(path), old);

  // A directory that does not exist.
  const std::string missing_dir = dir + "/no_such_dir/ckpt.safetensors";
  Status s = save_checkpoint(missing_dir, a, values_for(a, 2), 2);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().loc.file, missing_dir);
  EXPECT_NE(s.error().message.find("No such file or directory"), std::string::npos) << s.error().message;

  // The rename fails (a directory is in the way): its temporary file is removed.
  const std::string blocked = dir + "/blocked.safetensors";
  mkdir(blocked.c_str(), 0755);
  std::ofstream(blocked + "/inside") << "x";
  s = save_checkpoint(blocked, a, values_for(a, 2), 2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("cannot rename"), std::string::npos) << s.error().message;
  std::vector<std::string> entries;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') entries.push_back(e->d_name);
  }
  closedir(d);
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"blocked.safetensors", "ckpt.safetensors"}));
  EXPECT_EQ(slurp(path), old);

  // The old checkpoint still loads.
  Values target = values_for(a, 3);
  auto r = load_checkpoint(path, a, target);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->step, 1);
}

}  // namespace
}  // namespace weft
