// Subgraph loads across batch sizes: a labelled subgraph saved from a model built for one
// batch size loads, checked, into a model built for another (the checkpoint's weft.batch
// tells its batch dims apart from its architecture), while a real difference is still
// refused, and a checkpoint without weft.batch is compared exactly.
#include <cstdlib>

#include <gtest/gtest.h>

#include "frontend/checkpoint.h"
#include "frontend/flow.h"
#include "frontend/init_params.h"
#include "frontend/modules.h"
#include "formats/safetensors.h"

namespace weft {
namespace {
namespace subgraph_batch_test {  // this file's names, apart in its package's unity test

using Values = std::map<std::string, Tensor>;

std::string temp_path(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + name;
}

// encoder { Linear(4 -> 8), activation, Linear(8 -> 8) } then a head, for `batch`
// samples.
Model model_for(int64_t batch, ModulePtr activation) {
  auto encoder = FlowBuilder::from(Linear(4, 8))
                     .through(activation)
                     .through(Linear(8, 8))
                     .label("encoder")
                     .build();
  EXPECT_TRUE(encoder.ok()) << encoder.error().to_string();
  auto model = FlowBuilder::from(*encoder).through(Linear(8, 2)).build({{"x", f32({batch, 4})}});
  EXPECT_TRUE(model.ok()) << model.error().to_string();
  return std::move(*model);
}

Values values_for(const Model& model, uint64_t seed) {
  auto values = initialize_parameter_map(model, seed);
  EXPECT_TRUE(values.ok()) << values.error().to_string();
  return *values;
}

TEST(SubgraphBatch, LoadsIntoAModelBuiltForAnotherBatchSize) {
  Model trained = model_for(128, ReLU()), serving = model_for(1, ReLU());
  ASSERT_NE(trained.structural_hash("encoder").value(), serving.structural_hash("encoder").value());
  EXPECT_EQ(model_batch(trained), 128);
  const std::string path = temp_path("batch128.safetensors");
  const Values saved = values_for(trained, 1);
  ASSERT_TRUE(save_checkpoint(path, trained, saved, 7).ok());
  EXPECT_EQ(read_safetensors(path)->metadata.at("weft.batch"), "128");

  Values target = values_for(serving, 2);
  auto r = load_checkpoint(path, serving, target, {.subgraph = "encoder"});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(target.at("encoder.0.weight"), saved.at("encoder.0.weight"));
  EXPECT_EQ(target.at("encoder.2.bias"), saved.at("encoder.2.bias"));
  EXPECT_NE(target.at("1.weight"), saved.at("1.weight"));  // outside the subgraph

  // A different architecture at another batch size is still refused, and named.
  Model tanh = model_for(1, Tanh());
  Values other = values_for(tanh, 3);
  const Values before = other;
  r = load_checkpoint(path, tanh, other, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("subgraph 'encoder' differs from the checkpoint's: the checkpoint's "
                                   "model has `%3 = relu(%2) : f32[128,8]` where this model has "
                                   "`%3 = tanh(%2) : f32[1,8]`"),
            std::string::npos)
      << r.error().message;
  for (const auto& [k, t] : other) EXPECT_EQ(t, before.at(k)) << k;
}

TEST(SubgraphBatch, WithoutTheBatchInTheCheckpointTypesMustMatch) {
  Model trained = model_for(16, ReLU()), serving = model_for(2, ReLU());
  const std::string path = temp_path("nobatch.safetensors");
  ASSERT_TRUE(save_checkpoint(path, trained, values_for(trained, 1), 7).ok());
  // As an older weft wrote it: no weft.batch.
  StatusOr<SafetensorsFile> file = read_safetensors(path);
  ASSERT_TRUE(file.ok());
  file->metadata.erase("weft.batch");
  file->metadata.erase(std::string(kSafetensorsChecksumKey));
  file->metadata.erase(std::string(kSafetensorsMetadataChecksumKey));
  ASSERT_TRUE(write_safetensors(path, file->tensors, file->metadata).ok());
  Values target = values_for(serving, 2);
  auto r = load_checkpoint(path, serving, target, {.subgraph = "encoder"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the checkpoint's model has `%1 = matmul(%in1, %0) : "
                                   "f32[16,8]` where this model has `%1 = matmul(%in1, %0) : "
                                   "f32[2,8]`"),
            std::string::npos)
      << r.error().message;
}

}  // namespace subgraph_batch_test
}  // namespace
}  // namespace weft
