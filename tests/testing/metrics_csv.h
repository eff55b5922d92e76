#pragma once
// The training driver's metrics CSV (--metrics-csv) read back by a test: its columns by
// name, one value per step, an empty cell as NaN.

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace weft::testing {

inline std::map<std::string, std::vector<double>> read_metrics(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> names;
  std::map<std::string, std::vector<double>> columns;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    if (names.empty()) {
      names = cells;
      continue;
    }
    for (size_t c = 0; c < names.size() && c < cells.size(); ++c) {
      columns[names[c]].push_back(cells[c].empty() ? NAN : std::stod(cells[c]));
    }
  }
  return columns;
}

}  // namespace weft::testing
