// End-to-end tests of the weftc binary, run as a user would (a subprocess in the
// runfiles tree), checking its exit status, what it printed and what it wrote.
// `weftc migrate`: checkpoint keys renamed with their optimizer slots, and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/checkpoint.h"
#include "formats/safetensors.h"
#include "tools/weftc/weftc_testing.h"

namespace weft {
namespace {
namespace weftc_migrate_test {  // this file's names, apart in its package's unity test

using namespace weftc_testing;

// A checkpoint of `0.weight`, `1.weight` with Adam-like slots and a global counter.
std::string small_checkpoint(const std::string& name) {
  const std::string path = temp_dir() + "/" + name;
  CheckpointSchema schema;
  schema.params = {{"0.weight", {DType::f32, {2, 2}}}, {"1.weight", {DType::f32, {3}}}};
  schema.structural_hash = 0x42;
  std::map<std::string, Tensor> values;
  for (const auto& p : schema.params) {
    values[p.name] = Tensor(p.type);
    values["optimizer." + p.name + ".m"] = Tensor(p.type);
  }
  values["optimizer.t"] = Tensor::scalar(DType::i64, 1);
  EXPECT_TRUE(save_checkpoint(path, schema, values, 3).ok());
  return path;
}

std::vector<std::string> keys_in(const std::string& path) {
  std::vector<std::string> keys;
  auto file = read_safetensors(path);
  EXPECT_TRUE(file.ok()) << file.error().to_string();
  for (const auto& [key, t] : file->tensors) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(Weftc, MigrateRenamesKeysAndTheirSlots) {
  const std::string in = small_checkpoint("migrate_in.safetensors");
  const std::string out = temp_dir() + "/migrate_out.safetensors";
  Result r = weftc("migrate " + in + " -o " + out + " --prefix=0.:encoder.0. --rename 1.weight=head.weight");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "  0.weight -> encoder.0.weight\n"
            "  1.weight -> head.weight\n"
            "  optimizer.0.weight.m -> optimizer.encoder.0.weight.m\n"
            "  optimizer.1.weight.m -> optimizer.head.weight.m\n"
            "wrote " + out + ": 4 key(s) renamed\n");
  EXPECT_EQ(keys_in(out), (std::vector<std::string>{"encoder.0.weight", "head.weight", "optimizer.encoder.0.weight.m",
                                                   "optimizer.head.weight.m", "optimizer.t"}));
  // From a JSON file, in place, with the target model's hash.
  const std::string json = write_temp("renames.json", "{\"encoder.0.weight\": \"0.weight\"}");
  r = weftc("migrate " + out + " -o " + out + " --renames=" + json + " --structural-hash=00000000000000ff");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out,
            "  encoder.0.weight -> 0.weight\n"
            "  optimizer.encoder.0.weight.m -> optimizer.0.weight.m\n"
            "wrote " + out + ": 2 key(s) renamed, weft.structural_hash set\n");
  auto file = read_safetensors(out);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->metadata.at("weft.structural_hash"), "00000000000000ff");
  EXPECT_EQ(file->metadata.at("weft.step"), "3");
  // The hash alone, as README.md's carry-over of a conv2d-era checkpoint does (it was
  // refused: "nothing to rename").
  r = weftc("migrate " + out + " -o " + out + " --structural-hash=00000000000000aa");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "wrote " + out + ": 0 key(s) renamed, weft.structural_hash set\n");
  EXPECT_EQ(read_safetensors(out)->metadata.at("weft.structural_hash"), "00000000000000aa");
}

TEST(Weftc, MigrateErrors) {
  const std::string in = small_checkpoint("migrate_errors.safetensors");
  const std::string out = temp_dir() + "/migrate_errors_out.safetensors";
  const std::string dup = write_temp("dup.json", "{\"a\": \"b\",\n \"a\": \"c\"}");
  const std::string list = write_temp("list.json", "[\"a\"]");
  const std::string number = write_temp("number.json", "{\"0.weight\": 3}");
  const std::string twice = write_temp("twice.json", "{\"0.weight\": \"w\"}");
  struct Case {
    std::string args;
    std::string expected;
  };
  const Case cases[] = {
      {"--rename 2.weight=x", in + ": error: cannot migrate: the checkpoint has no key 2.weight to rename; nothing "
                                   "was written"},
      {"--rename 0.weight=x --rename 1.weight=x",
       in + ": error: cannot migrate: '0.weight' and '1.weight' would both become 'x'; nothing was written"},
      {"--prefix=2.:x.", in + ": error: cannot migrate: no key of the checkpoint begins with '2.' (prefix rule "
                              "'2.:x.'); nothing was written"},
      {"--rename 0.weight", "error: weftc migrate: --rename expects OLD=NEW, got '0.weight'"},
      {"--prefix=0.", "error: weftc migrate: --prefix expects OLD:NEW (OLD not empty), got '0.'"},
      {"--rename 0.weight=a --renames=" + twice,
       "error: weftc migrate: '0.weight' is renamed twice, to 'a' and to 'w'"},
      {"--renames=" + dup, dup + ":2:2: error: a key appears twice in one object"},
      {"--renames=" + list, list + ": error: not a JSON object of old names to new names (the file holds a array)"},
      {"--renames=" + number, number + ": error: not a JSON object of old names to new names (the new name of "
                                        "'0.weight' is not a non-empty string)"},
      {"", "error: weftc migrate: nothing to do; give --rename OLD=NEW, --renames FILE.json, --prefix OLD:NEW "
           "or --structural-hash=HEX"},
      {"--prefix=0.:x. --structural-hash=12", "error: weftc migrate: --structural-hash expects 16 lowercase hex "
                                              "digits (as a refused load prints the model's), got '12'"},
  };
  for (const Case& c : cases) {
    Result r = weftc("migrate " + in + " -o " + out + " " + c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args;
    EXPECT_EQ(r.out, c.expected + "\n") << c.args;
    EXPECT_FALSE(std::filesystem::exists(out)) << c.args;
  }
  Result r = weftc("migrate " + in + " --prefix=0.:x.");
  EXPECT_EQ(r.out, "error: weftc migrate: -o OUT.safetensors is required (it may be IN itself)\n");
  r = weftc("migrate " + temp_dir() + "/absent.safetensors -o " + out + " --prefix=0.:x.");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind(temp_dir() + "/absent.safetensors: error: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("No such file or directory"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace weftc_migrate_test
}  // namespace
}  // namespace weft
