// libFuzzer target: the CSV reader (training/data/dataset.h's csv_columns, what the training
// driver's --train/--test read for FILE.csv:COLUMN[+COLUMN...]), through a file. The
// columns picked are those of the seed corpus's header (a, b, label), as a group of two
// and as a target. Beyond not crashing: an error has a message and names the file, and
// one about a line names a line of the file; the columns that read hold as many samples
// each, in the shape and dtype their group asks for, every sample at a line of its own
// after the header; and checking them as class labels names a line of the file.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "training/data/dataset.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = weft::fuzz::write_scratch_file("weft_csv_fuzz", ".csv", data, size);
  const int64_t file_lines = 1 + std::count(data, data + size, '\n');
  const std::vector<std::vector<std::string>> groups = {{"a", "b"}, {"label"}};
  weft::StatusOr<std::vector<weft::Column>> columns = weft::csv_columns(path, groups);
  std::remove(path.c_str());
  if (!columns.ok()) {
    FUZZ_CHECK_ERROR(columns);
    FUZZ_CHECK(columns.error().loc.file == path, "CSV error without the file name: " + columns.error().to_string());
    FUZZ_CHECK(columns.error().loc.line <= file_lines,
               "CSV error past the file's last line: " + columns.error().to_string());
    return 0;
  }
  FUZZ_CHECK(columns->size() == groups.size(), "CSV read a column per group");
  const weft::Column& features = (*columns)[0];
  const weft::Column& labels = (*columns)[1];
  const int64_t samples = labels.size();
  FUZZ_CHECK(features.array.rank() == 2 && features.array.shape()[1] == 2, "a group of two is [samples, 2]");
  FUZZ_CHECK(labels.array.rank() == 1, "a group of one is [samples]");
  for (const weft::Column& c : *columns) {
    FUZZ_CHECK(c.file == path, "a CSV column without its file");
    FUZZ_CHECK(c.size() == samples, "CSV columns of one file hold different sample counts");
    FUZZ_CHECK(c.array.dtype() == weft::DType::i64 || c.array.dtype() == weft::DType::f64,
               "a CSV column neither i64 nor f64");
    FUZZ_CHECK(static_cast<int64_t>(c.lines.size()) == samples, "a CSV sample without its line");
    for (size_t i = 0; i < c.lines.size(); ++i) {
      FUZZ_CHECK(c.lines[i] >= 2 && c.lines[i] <= file_lines && (i == 0 || c.lines[i] > c.lines[i - 1]),
                 "CSV samples at lines out of order or past the file");
    }
  }
  weft::Status checked = weft::check_class_labels(labels, /*classes=*/10);
  if (!checked.ok()) {
    FUZZ_CHECK_ERROR(checked);
    FUZZ_CHECK(checked.error().message.find(", line ") != std::string::npos,
               "a bad CSV label without its line: " + checked.error().message);
  }
  return 0;
}
