#include "frontend/testing/module_fixtures.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "formats/npy.h"

namespace weft::testing {

ConvOptions conv(int64_t k, int64_t s, int64_t p, int64_t d, int64_t g, bool bias, int64_t op) {
  return ConvOptions{.kernel = k, .stride = s, .padding = p, .dilation = d, .groups = g,
                     .bias = bias, .output_padding = op};
}

Tensor load_npy(const std::string& path) {
  StatusOr<Tensor> t = read_npy(path);
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? *t : Tensor();
}

std::set<std::string> fixture_dirs(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

std::string error_of(ModulePtr m, std::vector<InputSpec> inputs, bool training,
                        std::source_location loc) {
  auto model = FlowBuilder::from(std::move(m), loc).build(inputs, {.training = training});
  return model.ok() ? "(no error)" : model.error().to_string();
}

}  // namespace weft::testing
