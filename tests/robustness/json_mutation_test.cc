// Malformed graph JSON never crashes weft: the JSON form of each seed graph
// (seed_graphs.h), truncated at every byte, edited structurally (fields dropped, values
// of the wrong type, wrong tags, huge numbers, arrays shuffled) and byte by byte, goes
// through graph_from_json and, when it reads, the same pipeline, verifier and
// interpreter as the `.wir` mutants. Errors must carry a message and the file name, and
// JSON syntax errors a line:col inside the text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ir/json.h"
#include "ir/op.h"
#include "ir/text.h"
#include "tests/robustness/graph_checks.h"
#include "tests/robustness/mutator.h"
#include "tests/robustness/seed_graphs.h"

namespace weft::robustness {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kStructuralMutantsPerSeed = 2500;
constexpr int kByteMutantsPerSeed = 1000;

std::string seed_json(const SeedGraph& seed, int indent) {
  StatusOr<Graph> g = parse_graph(seed.text, seed.name);
  EXPECT_TRUE(g.ok()) << g.error().to_string();
  return g.ok() ? graph_to_json(*g, indent) : "";
}

void check_json(Tally& tally, const std::string& label, const std::string& text) {
  ++tally.inputs;
  CrashContext context(label, text);
  try {
    StatusOr<Graph> g = graph_from_json(text, "g.json");
    if (!g.ok()) {
      // Syntax errors have a line:col; schema errors name the JSON path instead.
      tally.check_parse_error(label, text, g.error(), "g.json",
                              /*need_position=*/g.error().loc.line > 0);
      return;
    }
    tally.check_graph(label, text, std::move(*g));
  } catch (const std::exception& e) {
    tally.fail(label, text, std::string("exception escaped from graph_from_json: ") + e.what());
  }
}

// Structural edits on the parsed document.
class JsonMutator {
 public:
  explicit JsonMutator(uint32_t seed) : m_(seed, {}) {}

  std::string mutate(const Json& doc) {
    Json copy = doc;
    for (int n = m_.uniform(1, 3); n > 0; --n) mutate_once(copy);
    return copy.dump(m_.chance(0.5) ? -1 : 1);
  }

 private:
  void collect(Json& j, std::vector<Json*>& out) {
    out.push_back(&j);
    if (j.is_structured()) {
      for (auto& child : j) collect(child, out);
    }
  }

  Json replacement() {
    static const std::vector<Json> values = [] {
      std::vector<Json> v = {
          nullptr, true, false, 0, -1, 1, 2, 1.5, -0.0, 1e308, "", "x", "nan", "inf",
          "f33", "bf16", "i64", "param", "state", "data", "nope", "%x", "0", Json::array(),
          Json::object(), Json::array({1, 2, 3}), Json::array({-1}), Json::array({"a"}),
          Json::object({{"dtype", "f32"}, {"shape", Json::array()}}),
          Json::object({{"file", "f"}, {"line", -1}, {"col", 1}}),
          uint64_t{18446744073709551615u}, uint64_t{9223372036854775808u},
          int64_t{-9223372036854775807 - 1}, int64_t{9223372036854775807},
          int64_t{1000000000000}, int64_t{4294967296}, std::string(100000, 'n')};
      for (Op op : all_ops()) v.emplace_back(std::string(op_name(op)));
      return v;
    }();
    return m_.pick(values);
  }

  void mutate_once(Json& doc) {
    std::vector<Json*> all;
    collect(doc, all);
    Json& j = *m_.pick(all);
    switch (m_.uniform(0, 6)) {
      case 0:  // drop a field or element
        if (j.is_object() && !j.empty()) {
          auto it = j.begin();
          std::advance(it, m_.uniform(0, static_cast<int>(j.size()) - 1));
          j.erase(it.key());
        } else if (j.is_array() && !j.empty()) {
          j.erase(static_cast<size_t>(m_.uniform(0, static_cast<int>(j.size()) - 1)));
        }
        return;
      case 1:  // duplicate an array element
        if (j.is_array() && !j.empty()) j.push_back(j[static_cast<size_t>(m_.uniform(0, static_cast<int>(j.size()) - 1))]);
        return;
      case 2:  // swap two array elements
        if (j.is_array() && j.size() >= 2) {
          std::swap(j[static_cast<size_t>(m_.uniform(0, static_cast<int>(j.size()) - 1))],
                    j[static_cast<size_t>(m_.uniform(0, static_cast<int>(j.size()) - 1))]);
        }
        return;
      case 3:  // an unknown field
        if (j.is_object()) j["surprise"] = replacement();
        return;
      default:  // a value of another type, a wrong tag or a huge number
        j = replacement();
        return;
    }
  }

  Mutator m_;
};

TEST(JsonMutationTest, SeedsRead) {
  for (const SeedGraph& seed : seed_graphs()) {
    StatusOr<Graph> g = graph_from_json(seed_json(seed, 2), "g.json");
    EXPECT_TRUE(g.ok()) << seed.name << ": " << g.error().to_string();
  }
}

TEST(JsonMutationTest, EveryTruncation) {
  Tally tally("json truncations");
  for (const SeedGraph& seed : seed_graphs()) {
    std::string text = seed_json(seed, seed.name == "mlp.wir" ? 2 : -1);
    for (size_t n = 0; n < text.size(); ++n) {
      check_json(tally, std::string(seed.name) + " JSON truncated to " + std::to_string(n) + " bytes",
                 text.substr(0, n));
    }
  }
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

TEST(JsonMutationTest, StructuralMutations) {
  Tally tally("json structural mutations");
  for (size_t s = 0; s < seed_graphs().size(); ++s) {
    const SeedGraph& seed = seed_graphs()[s];
    Json doc = Json::parse(seed_json(seed, -1));
    JsonMutator mutator(/*seed=*/static_cast<uint32_t>(2000 + s));
    for (int i = 0; i < kStructuralMutantsPerSeed; ++i) {
      check_json(tally, std::string(seed.name) + " JSON mutant " + std::to_string(i) + " (seed " +
                            std::to_string(2000 + s) + ")",
                 mutator.mutate(doc));
    }
  }
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

TEST(JsonMutationTest, ByteMutations) {
  Tally tally("json byte mutations");
  for (size_t s = 0; s < seed_graphs().size(); ++s) {
    const SeedGraph& seed = seed_graphs()[s];
    std::string text = seed_json(seed, 1);
    Mutator mutator(/*seed=*/static_cast<uint32_t>(3000 + s),
                    {"null", "true", "{}", "[]", "\"\"", "\"op\"", "\"nodes\"", "\"f32\"",
                     "1e400", "-1e400", "\"\\ud800\"", "\"\\u0000\"", ",", ":", "\xff"});
    for (int i = 0; i < kByteMutantsPerSeed; ++i) {
      check_json(tally, std::string(seed.name) + " JSON byte mutant " + std::to_string(i) +
                            " (seed " + std::to_string(3000 + s) + ")",
                 mutator.mutate(text));
    }
  }
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

TEST(JsonMutationTest, PathologicalInputs) {
  Tally tally("json pathological");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", ""},
      {"NUL", std::string(1, '\0')},
      {"deep arrays", std::string(100000, '[')},
      {"deep arrays closed", std::string(20000, '[') + std::string(20000, ']')},
      {"deep objects", [] {
         std::string s;
         for (int i = 0; i < 20000; ++i) s += "{\"a\":";
         return s + "1" + std::string(20000, '}');
       }()},
      {"deep shape", "{\"version\":1,\"name\":\"g\",\"inputs\":[{\"name\":\"x\",\"kind\":\"data\","
                     "\"type\":{\"dtype\":\"f32\",\"shape\":" + std::string(10000, '[') +
                     std::string(10000, ']') + "}}],\"nodes\":[],\"outputs\":[\"x\"]}"},
      {"deeper shape", "{\"version\":1,\"name\":\"g\",\"inputs\":[{\"name\":\"x\",\"kind\":\"data\","
                       "\"type\":{\"dtype\":\"f32\",\"shape\":" + std::string(200000, '[') +
                       std::string(200000, ']') + "}}],\"nodes\":[],\"outputs\":[\"x\"]}"},
      {"huge dims", "{\"version\":1,\"name\":\"g\",\"inputs\":[{\"name\":\"x\",\"kind\":\"data\","
                    "\"type\":{\"dtype\":\"f32\",\"shape\":[9223372036854775807,2]}}],"
                    "\"nodes\":[],\"outputs\":[\"x\"]}"},
      {"float dim", "{\"version\":1,\"name\":\"g\",\"inputs\":[{\"name\":\"x\",\"kind\":\"data\","
                    "\"type\":{\"dtype\":\"f32\",\"shape\":[2.5]}}],\"nodes\":[],\"outputs\":[\"x\"]}"},
      {"number overflow", "{\"version\":1e400}"},
      {"version huge", "{\"version\":18446744073709551616,\"name\":\"g\",\"inputs\":[],\"nodes\":[],\"outputs\":[]}"},
      {"lone surrogate", "{\"version\":1,\"name\":\"\\ud800\",\"inputs\":[],\"nodes\":[],\"outputs\":[]}"},
      {"invalid UTF-8", "{\"version\":1,\"name\":\"\xff\",\"inputs\":[],\"nodes\":[],\"outputs\":[]}"},
      {"duplicate keys", "{\"version\":1,\"version\":2,\"name\":\"g\",\"inputs\":[],\"nodes\":[],\"outputs\":[]}"},
      {"trailing garbage", "{\"version\":1,\"name\":\"g\",\"inputs\":[],\"nodes\":[],\"outputs\":[]} x"},
  };
  for (const auto& [label, text] : cases) check_json(tally, label, text);
  tally.print_summary();
  EXPECT_EQ(tally.failures(), 0);
}

// ordered_json copies nested values recursively when an object grows, so a deeply
// nested document once overflowed the stack inside nlohmann's parser. The cap is what the
// writer needs for bodies nested to the IR's limit (ir/json_test.cc): level 776, the
// 775th '[', is refused.
TEST(JsonMutationTest, DeepNestingIsAnError) {
  std::string text = "{\"version\":1,\"name\":" + std::string(800, '[') + std::string(800, ']') +
                     ",\"inputs\":[]}";
  StatusOr<Graph> g = graph_from_json(text, "d.json");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().to_string(), "d.json:1:795: error: invalid JSON: nested deeper than 775 levels; weft reads "
                                   "graphs whose bodies nest at most 256 deep");
}

// nlohmann throws out_of_range (not parse_error) for a number beyond double; it once
// escaped graph_from_json.
TEST(JsonMutationTest, NumberOverflowIsAnError) {
  StatusOr<Graph> g = graph_from_json("{\"version\": 1e400}", "n.json");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().to_string(), "n.json: error: invalid JSON: number overflow parsing '1e400'");
}

}  // namespace
}  // namespace weft::robustness
