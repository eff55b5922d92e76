// The generated sources name the model's source file as the loss's location, never the
// generator's own (tools/aot/generate_main.cc), so they change only when the model does
// (#29). Reads scheduled_momentum's generated step (this package's weft_library).

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(GeneratedLocation, TheLossCarriesTheModelsLocation) {
  const std::string step = read("tools/aot/scheduled_momentum_step.cc");
  ASSERT_NE(step.find("\"loss\""), std::string::npos) << "no loss invocation in the step";
  EXPECT_EQ(step.find("generate_main.cc"), std::string::npos);
  EXPECT_NE(step.find("\"tools/aot/testing/scheduled_momentum_model.cc\""), std::string::npos);
}

}  // namespace
