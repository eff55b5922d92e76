#include "tools/weftc/weftc_testing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "formats/npy.h"

namespace weft::weftc_testing {

std::string temp_dir() { return testing::test_tmpdir(); }

Result weftc(const std::string& args, const std::string& env) {
  static const std::string binary = std::string(std::getenv("PWD")) + "/tools/weftc/weftc";
  return testing::run_command(env + " " + binary + " " + args);
}

std::string write_temp(const std::string& name, const std::string& contents) {
  std::string path = temp_dir() + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

std::string example_inputs() {
  std::string args;
  for (const char* name : {"x", "labels", "w1", "b1", "w2", "b2", "lr"}) {
    args += std::string(" --input ") + name + "=" + kExample + name + ".npy";
  }
  return args;
}

void expect_close(const std::string& actual_path, const std::string& expected_path, double tol) {
  auto actual = read_npy(actual_path);
  auto expected = read_npy(expected_path);
  ASSERT_TRUE(actual.ok()) << actual.error().to_string();
  ASSERT_TRUE(expected.ok()) << expected.error().to_string();
  ASSERT_EQ(actual->type(), expected->type()) << actual_path;
  for (int64_t i = 0; i < actual->numel(); ++i) {
    double a = actual->get_double(i), b = expected->get_double(i);
    EXPECT_LE(std::abs(a - b), tol + tol * std::abs(b)) << actual_path << " element " << i;
  }
}

}  // namespace weft::weftc_testing
