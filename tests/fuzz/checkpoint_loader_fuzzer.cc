// libFuzzer target: the checkpoint loader (frontend/checkpoint.h over runtime/
// safetensors.h), through a file, into a small model with a parameter, batch-norm state
// and an optimizer slot. Beyond not crashing: an error has a message naming the file and
// leaves every value exactly as it was (the loader stages, then commits); a load that
// succeeds leaves every value with its expected type. Inputs are mutated by
// checkpoint_mutator.h: the metadata values and the key set with valid checksums, as well
// as the bytes.
//
// WEFT_FUZZ_WRITE_SEED=PATH writes a valid checkpoint of the model to PATH and exits:
// how the seed corpus's checkpoint was made (tools/fuzz --make-seeds).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "frontend/checkpoint.h"
#include "frontend/flow.h"
#include "frontend/init_params.h"
#include "frontend/modules.h"
#include "tests/fuzz/checkpoint_mutator.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

struct Fixture {
  weft::Model model;
  std::map<std::string, weft::Tensor> values;
};

Fixture make_fixture() {
  using namespace weft;
  StatusOr<Model> model = FlowBuilder::from(Conv2d(2, 3, {.kernel = 3, .padding = 1}))
                              .through(BatchNorm2d(3))
                              .through(Flatten())
                              .through(Linear(3 * 4 * 4, 2))
                              .build({{"x", f32({2, 2, 4, 4})}});
  FUZZ_CHECK(model.ok(), "fixture model: " + model.status().to_string());
  StatusOr<std::map<std::string, Tensor>> values = initialize_parameter_map(*model, 7);
  FUZZ_CHECK(values.ok(), "fixture values: " + values.status().to_string());
  // An optimizer slot and a model-wide entry, as the Trainer keeps them.
  const ParamInfo& first = model->parameters().front();
  const Type& type = model->graph().type(first.value);
  (*values)["optimizer." + first.name + ".m"] =
      Tensor::from_doubles(type.dtype, type.shape, std::vector<double>(type.numel(), 0.5));
  (*values)["optimizer.t"] = Tensor::scalar(DType::i64, 3);
  return Fixture{std::move(*model), std::move(*values)};
}

Fixture& fixture() {
  static Fixture f = make_fixture();
  return f;
}

bool same_bytes(const weft::Tensor& a, const weft::Tensor& b) {
  return a == b;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weft::fuzz::write_seed_if_asked([](const std::string& path) {
    return weft::save_checkpoint(path, fixture().model, fixture().values, 42);
  });
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  return weft::fuzz::mutate_checkpoint(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path =
      weft::fuzz::write_scratch_file("weft_checkpoint_fuzz", ".safetensors", data, size);

  Fixture& fx = fixture();
  std::map<std::string, weft::Tensor> values;  // a deep copy to load into
  for (const auto& [k, v] : fx.values) values.emplace(k, v);
  for (bool strict : {false, true}) {
    for (const char* subgraph : {"", "0"}) {
      weft::StatusOr<weft::LoadReport> r =
          weft::load_checkpoint(path, fx.model, values, {.subgraph = subgraph, .strict = strict});
      if (!r.ok()) {
        FUZZ_CHECK_ERROR(r);
        for (const auto& [k, v] : fx.values) {
          FUZZ_CHECK(values.count(k) == 1 && same_bytes(values.at(k), v),
                     "a failed load changed '" + k + "': " + r.error().to_string());
        }
        FUZZ_CHECK(values.size() == fx.values.size(), "a failed load added values");
      } else {
        for (const auto& [k, v] : fx.values) {
          FUZZ_CHECK(values.at(k).type() == v.type(), "a load changed the type of '" + k + "'");
        }
        values.clear();  // back to the fixture's values for the next variant
        for (const auto& [k, v] : fx.values) values.emplace(k, v);
      }
    }
  }
  std::remove(path.c_str());
  return 0;
}
