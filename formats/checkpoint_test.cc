// migrate_checkpoint. Loads are tested through the Model in frontend/checkpoint_test.cc.
#include "formats/checkpoint.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "formats/safetensors.h"

namespace weft {
namespace {

using Values = std::map<std::string, Tensor>;
using Renamed = std::vector<std::pair<std::string, std::string>>;

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

Tensor filled(Type type, double start) {
  Tensor t(type);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_double(i, start + static_cast<double>(i));
  return t;
}

// An encoder `enc` { 0: weight, bias } and a head `1.weight`, with slots `m` for each
// parameter, a global `optimizer.t`, and the encoder's subgraph entries.
CheckpointSchema schema() {
  CheckpointSchema s;
  s.params = {{"enc.0.weight", {DType::f32, {2, 3}}}, {"enc.0.bias", {DType::f32, {2}}}, {"1.weight", {DType::f32, {1, 2}}}};
  s.structural_hash = 0x1234;
  s.subgraphs = {{"enc", 0xabcd, "graph @subgraph() -> () {\n  return\n}\n"}};
  s.structure = "graph @main() -> () {\n  return\n}\n";
  return s;
}

// Saves the schema's checkpoint at `path`; returns its values.
Values save(const std::string& path) {
  Values values;
  double start = 1;
  for (const CheckpointSchema::Entry& p : schema().params) {
    values[p.name] = filled(p.type, start);
    values["optimizer." + p.name + ".m"] = filled(p.type, start + 100);
    start += 10;
  }
  values["optimizer.t"] = Tensor::scalar(DType::i64, 7);
  EXPECT_TRUE(save_checkpoint(path, schema(), values, /*step=*/7).ok());
  return values;
}

std::map<std::string, Tensor> tensors_of(const std::string& path) {
  StatusOr<SafetensorsFile> file = read_safetensors(path);
  EXPECT_TRUE(file.ok()) << file.error().to_string();
  return std::map<std::string, Tensor>(file->tensors.begin(), file->tensors.end());
}

TEST(MigrateCheckpoint, RenamesKeysAndTheirOptimizerSlots) {
  const std::string in = temp_path("mapping_in.safetensors"), out = temp_path("mapping_out.safetensors");
  const Values values = save(in);
  auto report = migrate_checkpoint(in, out, {.renames = {{"1.weight", "head.weight"}}});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->renamed, (Renamed{{"1.weight", "head.weight"}, {"optimizer.1.weight.m", "optimizer.head.weight.m"}}));
  const Values migrated = tensors_of(out);
  EXPECT_EQ(migrated.size(), values.size());
  EXPECT_EQ(migrated.at("head.weight"), values.at("1.weight"));
  EXPECT_EQ(migrated.at("optimizer.head.weight.m"), values.at("optimizer.1.weight.m"));
  EXPECT_EQ(migrated.at("enc.0.weight"), values.at("enc.0.weight"));
  EXPECT_EQ(migrated.at("optimizer.t"), values.at("optimizer.t"));
  // The metadata is kept: the step, the architecture's hash (a whole load into the renamed
  // model is still refused) and the subgraph entries.
  StatusOr<SafetensorsFile> file = read_safetensors(out);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->metadata.at("weft.step"), "7");
  EXPECT_EQ(file->metadata.at("weft.structural_hash"), structural_hash_hex(0x1234));
  EXPECT_EQ(file->metadata.at("weft.subgraph_hash.enc"), structural_hash_hex(0xabcd));
  // But not the whole model's structure, which names the old keys.
  ASSERT_EQ(tensors_of(in).size(), values.size());
  EXPECT_EQ(read_safetensors(in)->metadata.at("weft.structure"), schema().structure);
  EXPECT_EQ(file->metadata.count("weft.structure"), 0u);

  // The renamed checkpoint loads into a model with the new names (given its hash).
  CheckpointSchema renamed = schema();
  renamed.params[2].name = "head.weight";
  Values target = {{"optimizer.t", Tensor::scalar(DType::i64, 0)}};
  auto loaded = load_checkpoint(out, renamed, target);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  EXPECT_EQ(target.at("optimizer.head.weight.m"), values.at("optimizer.1.weight.m"));
}

TEST(MigrateCheckpoint, PrefixRulesRenameKeysSlotsAndLabels) {
  const std::string path = temp_path("prefix.safetensors");
  const Values values = save(path);
  // In place; the longest matching prefix wins; a new structural hash is set.
  auto report = migrate_checkpoint(path, path,
                                   {.prefixes = {{"enc.", "backbone."}, {"enc.0.b", "backbone.0.b"}, {"1.", "head."}},
                                    .structural_hash = 0x99});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->renamed, (Renamed{{"enc.0.weight", "backbone.0.weight"},
                                      {"enc.0.bias", "backbone.0.bias"},
                                      {"1.weight", "head.weight"},
                                      {"optimizer.1.weight.m", "optimizer.head.weight.m"},
                                      {"optimizer.enc.0.bias.m", "optimizer.backbone.0.bias.m"},
                                      {"optimizer.enc.0.weight.m", "optimizer.backbone.0.weight.m"}}));
  EXPECT_EQ(tensors_of(path).at("optimizer.backbone.0.weight.m"), values.at("optimizer.enc.0.weight.m"));
  StatusOr<SafetensorsFile> file = read_safetensors(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->metadata.at("weft.structural_hash"), structural_hash_hex(0x99));
  EXPECT_EQ(file->metadata.at("weft.subgraph_hash.backbone"), structural_hash_hex(0xabcd));
  EXPECT_EQ(file->metadata.count("weft.subgraph_hash.enc"), 0u);
  EXPECT_EQ(file->metadata.at("weft.subgraph_structure.backbone"), schema().subgraphs[0].structure);

  // A prefix that makes a subgraph the whole model drops its entries.
  ASSERT_TRUE(migrate_checkpoint(path, path, {.prefixes = {{"backbone.", ""}}}).ok());
  file = read_safetensors(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->metadata.count("weft.subgraph_hash.backbone") + file->metadata.count("weft.subgraph_hash."), 0u);
  EXPECT_EQ(tensors_of(path).at("0.weight"), values.at("enc.0.weight"));
}

TEST(MigrateCheckpoint, ErrorsNameWhatWasWrongAndWriteNothing) {
  const std::string in = temp_path("errors_in.safetensors"), out = temp_path("errors_out.safetensors");
  save(in);
  std::ofstream(out) << "old";
  struct Case {
    KeyMigration migration;
    std::string message;
  };
  const Case cases[] = {
      {{.renames = {{"2.weight", "x"}, {"enc.1.bias", "y"}}},
       "cannot migrate: the checkpoint has no key 2.weight, enc.1.bias to rename; nothing was written"},
      {{.renames = {{"enc.0.bias", "1.weight"}}},
       "cannot migrate: 'enc.0.bias' would become '1.weight', a key the checkpoint keeps; nothing was written"},
      {{.renames = {{"enc.0.bias", "b"}, {"1.weight", "b"}}},
       "cannot migrate: 'enc.0.bias' and '1.weight' would both become 'b'; nothing was written"},
      {{.renames = {{"1.weight", ""}}},
       "cannot migrate: '1.weight' would be renamed to an empty name; nothing was written"},
      {{.prefixes = {{"encoder.", "backbone."}}},
       "cannot migrate: no key of the checkpoint begins with 'encoder.' (prefix rule 'encoder.:backbone.'); "
       "nothing was written"},
      {{.prefixes = {{"", "model."}}},
       "cannot migrate: a prefix rule needs an old prefix (':model.'); nothing was written"},
  };
  for (const Case& c : cases) {
    auto r = migrate_checkpoint(in, out, c.migration);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.error().to_string(), in + ": error: " + c.message);
    EXPECT_EQ(slurp(out), "old");
  }
  // Two labels renamed onto one.
  CheckpointSchema two = schema();
  two.subgraphs.push_back({"backbone", 0x1, "x"});
  ASSERT_TRUE(save_checkpoint(in, two, tensors_of(in), 7).ok());
  auto r = migrate_checkpoint(in, out, {.prefixes = {{"enc.", "backbone."}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "cannot migrate: two labelled subgraphs would both be 'backbone'; nothing was written");
  // An unreadable file, and a malformed one.
  r = migrate_checkpoint(temp_path("no_such.safetensors"), out, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().loc.file, temp_path("no_such.safetensors"));
  EXPECT_NE(r.error().message.find("No such file or directory"), std::string::npos) << r.error().message;
  ASSERT_TRUE(write_safetensors(in, {}, {{"weft.format_version", "2"}}).ok());
  r = migrate_checkpoint(in, out, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "checkpoint format version 2 is newer than this weft reads (1); upgrade weft");
  EXPECT_EQ(slurp(out), "old");
}

// Loss scaling's state edited by hand: a scale of 0 (every later update NaN), NaN or inf
// (every update skipped for good), <= 0, or a negative count is refused before anything
// is committed; a valid one loads.
TEST(LoadCheckpoint, RefusesALossScaleStateNoRunCouldWrite) {
  const std::string path = temp_path("loss_scale.safetensors");
  CheckpointScope scope;
  scope.loss_scale = {"loss_scale", "loss_scale_growth_tracker", "skipped_steps"};
  scope.optional_keys = {"loss_scale", "loss_scale_growth_tracker", "skipped_steps"};
  auto attempt = [&](double scale, int64_t tracker, int64_t skipped) {
    Values values = save(path);
    values["loss_scale"] = Tensor::scalar(DType::f32, scale);
    values["loss_scale_growth_tracker"] = Tensor::scalar(DType::i64, static_cast<double>(tracker));
    values["skipped_steps"] = Tensor::scalar(DType::i64, static_cast<double>(skipped));
    EXPECT_TRUE(save_checkpoint(path, schema(), values, /*step=*/7).ok());
    Values into = values;
    into["loss_scale"] = Tensor::scalar(DType::f32, 65536);
    into["loss_scale_growth_tracker"] = Tensor::scalar(DType::i64, 0);
    into["skipped_steps"] = Tensor::scalar(DType::i64, 0);
    const Values before = into;
    StatusOr<LoadReport> r = load_checkpoint(path, schema(), into, scope);
    if (r.ok()) return std::string("ok");
    EXPECT_EQ(into, before) << "a refused load changed the values";
    return r.error().to_string();
  };
  EXPECT_EQ(attempt(1024, 3, 2), "ok");
  EXPECT_EQ(attempt(0, 0, 0),
            path + ": error: 'loss_scale' is 0 in the checkpoint; a loss scale must be a finite number > 0 "
                   "(GradScaler's initial scale is 65536); nothing was loaded");
  EXPECT_NE(attempt(-5, 0, 0).find("'loss_scale' is -5 in the checkpoint; a loss scale must be"), std::string::npos);
  EXPECT_NE(attempt(std::nan(""), 0, 0).find("'loss_scale' is nan in"), std::string::npos);
  EXPECT_NE(attempt(INFINITY, 0, 0).find("'loss_scale' is inf in"), std::string::npos);
  EXPECT_EQ(attempt(1024, -100, 0),
            path + ": error: 'loss_scale_growth_tracker' is -100 in the checkpoint; a count of steps must be "
                   ">= 0; nothing was loaded");
  EXPECT_NE(attempt(1024, 0, -3).find("'skipped_steps' is -3 in the checkpoint"), std::string::npos);
}

}  // namespace
}  // namespace weft
