// training/driver/README.md's flag table against the driver's own flags (flags.h): every
// flag a training binary's --help lists has a row, and every row names such a flag, so
// the table cannot fall behind --help again (it lacked --partial-load).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "training/driver/flags.h"

namespace weft::driver {
namespace {

/// The flags named at the start of each row of the README's table (`| `--NAME...`, and
/// the further `--NAME` of a row that groups several, such as the onecycle flags).
std::set<std::string> readme_flags() {
  std::ifstream in("training/driver/README.md");
  EXPECT_TRUE(in.good()) << "training/driver/README.md is the test's data";
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `--", 0) != 0) continue;
    const std::string first_cell = line.substr(0, line.find(" |", 2));
    for (size_t at = first_cell.find("`--"); at != std::string::npos; at = first_cell.find("`--", at + 1)) {
      const size_t begin = at + 3;
      const size_t end = first_cell.find_first_of("=`", begin);
      names.insert(first_cell.substr(begin, end - begin));
    }
  }
  return names;
}

TEST(DriverReadme, TheFlagTableHasARowForEveryFlagAndNoOther) {
  const std::set<std::string> documented = readme_flags();
  const std::vector<std::string> flags = flag_names();
  for (const std::string& name : flags) {
    EXPECT_TRUE(documented.count(name)) << "--" << name << " has no row in training/driver/README.md";
  }
  for (const std::string& name : documented) {
    // --backend is not a driver flag: each binary's main() accepts the backend it was built
    // for (run_driver, training/driver/driver.cc), and its row says so.
    if (name == "backend") continue;
    EXPECT_NE(std::find(flags.begin(), flags.end(), name), flags.end())
        << "training/driver/README.md documents --" << name << ", which the driver does not take";
  }
}

}  // namespace
}  // namespace weft::driver
