#include "training/data/dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "formats/npy.h"
#include "formats/safetensors.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

std::string temp_path(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp") + "/" + name;
}

std::string write_text(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

Tensor f32_rows(std::vector<float> values, int64_t width) {
  Tensor t(Type{DType::f32, {static_cast<int64_t>(values.size()) / width, width}});
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

TEST(Csv, ReadsGroupsOfColumnsByHeaderName) {
  const std::string path = write_text("ok.csv", "a, b ,label,c\n1,2,0,3\n4.5,-5e-1,2,6\n\n");
  auto cols = csv_columns(path, {{"c", "a"}, {"label"}});
  ASSERT_TRUE(cols.ok()) << cols.error().to_string();
  ASSERT_EQ(cols->size(), 2u);
  EXPECT_EQ((*cols)[0].array.type().to_string(), "f64[2,2]");
  EXPECT_EQ((*cols)[0].array.data<double>()[0], 3);
  EXPECT_EQ((*cols)[0].array.data<double>()[1], 1);
  EXPECT_EQ((*cols)[0].array.data<double>()[3], 4.5);
  EXPECT_EQ((*cols)[0].where(), path + ", column 'c,a'");
  EXPECT_EQ((*cols)[1].array.type().to_string(), "i64[2]");  // every value an integer
  EXPECT_EQ((*cols)[1].array.data<int64_t>()[1], 2);
}

TEST(Csv, RowWithWrongFieldCountNamesFileAndLine) {
  const std::string path = write_text("short.csv", "a,b,label\n1,2,0\n3,4\n");
  auto cols = csv_columns(path, {{"a", "b"}, {"label"}});
  ASSERT_FALSE(cols.ok());
  EXPECT_EQ(cols.error().loc.file, path);
  EXPECT_EQ(cols.error().loc.line, 3);
  EXPECT_EQ(cols.error().message, "line 3 has 2 fields; the header (line 1) has 3");
}

TEST(Csv, NonNumberNamesFileLineAndColumn) {
  const std::string path = write_text("text.csv", "a,b,label\n1,2,0\n3,x4,1\n");
  auto cols = csv_columns(path, {{"a", "b"}, {"label"}});
  ASSERT_FALSE(cols.ok());
  EXPECT_EQ(cols.error().loc.file, path);
  EXPECT_EQ(cols.error().loc.line, 3);
  EXPECT_EQ(cols.error().loc.col, 2);
  EXPECT_EQ(cols.error().message, "line 3, column 'b': 'x4' is not a number");
  auto empty = csv_columns(write_text("empty_field.csv", "a,label\n,1\n"), {{"a"}, {"label"}});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().message, "line 2, column 'a': '' is not a number");
}

TEST(Csv, UnknownColumnListsTheHeader) {
  const std::string path = write_text("h.csv", "a,b\n1,2\n");
  auto cols = csv_columns(path, {{"a"}, {"y"}});
  ASSERT_FALSE(cols.ok());
  EXPECT_EQ(cols.error().loc.file, path);
  EXPECT_EQ(cols.error().message, "has no column 'y'; its header (line 1) names 'a', 'b'");
  auto missing = csv_columns(temp_path("absent.csv"), {{"a"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("cannot be opened"));
}

// A label's place is its line, as the reader's own errors count (a blank line holds no
// sample): it used to be "row 2", the sample index, where the file's line 5 was meant.
TEST(Labels, OutOfRangeNamesFileLineAndColumn) {
  const std::string path = write_text("labels.csv", "x,label\n0,1\n\n0,9\n0,10\n");
  auto cols = csv_columns(path, {{"x"}, {"label"}});
  ASSERT_TRUE(cols.ok()) << cols.error().to_string();
  EXPECT_TRUE(check_class_labels((*cols)[1], 11).ok());
  Status s = check_class_labels((*cols)[1], 10);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().loc.file, path);
  EXPECT_EQ(s.error().message,
            path + ", column 'label', line 5 (sample 2): the label 10 is not a class index in [0, 10)");
  const std::string frac = write_text("frac.csv", "label\n0.5\n");
  Status f = check_class_labels((*csv_columns(frac, {{"label"}}))[0], 10);
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.error().message, HasSubstr(", line 2 (sample 0): the label 0.5 is not a class index"));
  // An array's samples are its rows.
  Tensor y(Type{DType::i64, {3}});
  y.data<int64_t>()[0] = 0, y.data<int64_t>()[1] = 10, y.data<int64_t>()[2] = 1;
  Status a = check_class_labels(Column{y, "y.npy", ""}, 10);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().message, "y.npy, row 1: the label 10 is not a class index in [0, 10)");
}

// A header naming a column twice was read with the last one silently winning; it is
// refused where the name repeats, as the JSON readers refuse a key given twice.
TEST(Csv, ColumnNamedTwiceIsRefused) {
  const std::string path = write_text("twice.csv", "label,x,label\n1,2,3\n");
  auto cols = csv_columns(path, {{"x"}, {"label"}});
  ASSERT_FALSE(cols.ok());
  EXPECT_EQ(cols.error().to_string(), path + ":1:3: error: the header (line 1) names the column 'label' twice, "
                                             "as fields 1 and 3; rename or remove one (CSV readers keep either)");
  // Even when the column is not picked; unnamed columns may repeat.
  EXPECT_FALSE(csv_columns(path, {{"x"}}).ok());
  auto unnamed = csv_columns(write_text("unnamed.csv", "x,,\n1,,\n"), {{"x"}});
  ASSERT_TRUE(unnamed.ok()) << unnamed.error().to_string();
}

// A UTF-8 byte order mark (spreadsheets write one) used to become part of the first
// name: "has no column 'label'; its header names 'label', 'id'".
TEST(Csv, ByteOrderMarkIsSkipped) {
  const std::string path = write_text("bom.csv", "\xEF\xBB\xBFlabel,id\n1,7\n");
  auto cols = csv_columns(path, {{"label"}, {"id"}});
  ASSERT_TRUE(cols.ok()) << cols.error().to_string();
  EXPECT_EQ((*cols)[0].array.data<int64_t>()[0], 1);
  EXPECT_EQ((*cols)[1].array.data<int64_t>()[0], 7);
  // Only at the start of the file.
  auto later = csv_columns(write_text("bom2.csv", "label,\xEF\xBB\xBFid\n1,7\n"), {{"id"}});
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().message, "has no column 'id'; its header (line 1) names 'label', '\xEF\xBB\xBFid'");
}

// Fields in double quotes (RFC 4180: R's write.csv quotes every header name) are their
// text; the header '"label"' could not be picked ("has no column 'label'; its header
// (line 1) names '""', '"x"', '"label"'"), and a leading '+' was "not a number".
TEST(Csv, QuotedFieldsAndAPlusSign) {
  const std::string path = write_text("quoted.csv",
                                      "\"\",\"x\", \"label\" ,\"a, \"\"b\"\"\"\n"
                                      "\"1\",+1.5,\"2\",7\n"
                                      "\"2\",-0.5, 3 ,+8\n");
  auto cols = csv_columns(path, {{"x"}, {"label"}, {"a, \"b\""}});
  ASSERT_TRUE(cols.ok()) << cols.error().to_string();
  EXPECT_EQ((*cols)[0].array.type().to_string(), "f64[2]");
  EXPECT_EQ((*cols)[0].array.data<double>()[0], 1.5);
  EXPECT_EQ((*cols)[0].array.data<double>()[1], -0.5);
  EXPECT_EQ((*cols)[1].array.type().to_string(), "i64[2]");
  EXPECT_EQ((*cols)[1].array.data<int64_t>()[0], 2);
  EXPECT_EQ((*cols)[1].array.data<int64_t>()[1], 3);
  EXPECT_EQ((*cols)[2].array.data<int64_t>()[1], 8);
  // Still refused: a sign on its own or doubled, a quote that does not close.
  for (const char* bad : {"+", "++1", "+-1", "\"1"}) {
    auto r = csv_columns(write_text("bad_sign.csv", std::string("x\n") + bad + "\n"), {{"x"}});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message, std::string("line 2, column 'x': '") + bad + "' is not a number");
  }
}

// A directory opens as a stream that reads nothing, and was reported as an empty file.
TEST(Csv, DirectoryIsNamedAsOne) {
  const std::string dir = temp_path("data.csv");
  std::filesystem::create_directories(dir);
  auto cols = csv_columns(dir, {{"x"}});
  ASSERT_FALSE(cols.ok());
  EXPECT_EQ(cols.error().to_string(), dir + ": error: is a directory; give the path of a CSV file");
}

// A gzip-compressed or binary file given as the CSV echoed its bytes into the error (cut
// short at the first NUL or newline); a NUL in a later line the same.
TEST(Csv, BinaryBytesAreNamedNotEchoed) {
  const std::string gz = write_text("data.csv.gz.csv", std::string("\x1f\x8b\x08\x08\xc3m\x0ek\n", 9));
  EXPECT_EQ(csv_columns(gz, {{"x"}}).error().to_string(),
            gz + ":1:0: error: line 1 is not text: byte 1 is 0x1F (a compressed or binary file?); a CSV file is UTF-8 "
                 "text");
  const std::string nul = write_text("nul.csv", std::string("x,y\n1,2\n\x01\0,3\n", 13));
  EXPECT_EQ(csv_columns(nul, {{"x"}}).error().to_string(),
            nul + ":3:0: error: line 3 is not text: byte 1 is 0x01 (a compressed or binary file?); a CSV file is UTF-8 "
                  "text");
  // UTF-8 names and fields stay text.
  const std::string utf8 = write_text("utf8.csv", "température,y\n1.5,2\n");
  EXPECT_TRUE(csv_columns(utf8, {{"température"}}).ok());
}

TEST(Sources, DifferentLengthsNameBothFilesAndLengths) {
  const std::string x = temp_path("x3.npy"), y = temp_path("y2.npy");
  ASSERT_TRUE(write_npy(x, f32_rows({1, 2, 3, 4, 5, 6}, 2)).ok());
  ASSERT_TRUE(write_npy(y, f32_rows({0, 1}, 1)).ok());
  auto cx = npy_column(x);
  auto cy = npy_column(y);
  ASSERT_TRUE(cx.ok() && cy.ok());
  Status s = check_same_length({*cx, *cy});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().loc.file, y);
  EXPECT_EQ(s.error().message,
            "holds 2 samples; " + x + " holds 3: the sources of one data set must hold as many samples each");
  EXPECT_TRUE(check_same_length({*cx, *cx}).ok());
}

TEST(Sources, SafetensorsColumnByName) {
  const std::string path = temp_path("data.safetensors");
  ASSERT_TRUE(write_safetensors(path, {{"images", f32_rows({1, 2, 3, 4}, 2)}, {"labels", f32_rows({0, 1}, 1)}}).ok());
  auto c = safetensors_column(path, "images");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->array.type().to_string(), "f32[2,2]");
  EXPECT_EQ(c->where(), path + ", column 'images'");
  auto missing = safetensors_column(path, "targets");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().loc.file, path);
  EXPECT_EQ(missing.error().message, "has no tensor 'targets'; it holds 'images', 'labels'");
}

TEST(Sources, IdxAndScalarNpy) {
  const std::string idx = write_text("a.idx", std::string("\0\0\x08\x02\0\0\0\x02\0\0\0\x03", 12) + "\x01\x02\x03\x04\x05\xff");
  auto c = idx_column(idx);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->size(), 2);
  const std::string scalar = temp_path("scalar.npy");
  ASSERT_TRUE(write_npy(scalar, Tensor::scalar(DType::f32, 1.0)).ok());
  auto s = npy_column(scalar);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "holds a scalar f32[]; dimension 0 must be the sample");
}

TEST(Sources, ByCommandLineSpelling) {
  const std::string csv = write_text("spec.csv", "a,b,y\n1,2,0\n3,4,1\n");
  auto c = source_column(csv + ":a+b");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->array.type().to_string(), "i64[2,2]");
  const std::string st = temp_path("spec.safetensors");
  ASSERT_TRUE(write_safetensors(st, {{"x", f32_rows({1, 2}, 1)}}).ok());
  auto s = source_column(st + ":x");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->name, "x");
  // A trailing '+' names an empty column, as a doubled one does (it was dropped silently).
  for (const char* spec : {":a+", ":a++b"}) {
    EXPECT_EQ(source_column(csv + spec).error().message, "has no column ''; its header (line 1) names 'a', 'b', 'y'")
        << spec;
  }
  auto bare = source_column(csv);
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.error().message, "names no columns: write FILE.safetensors:TENSOR or FILE.csv:COLUMN[+COLUMN...]");
}

TEST(BatchPlan, DropsOrPadsTheLastPartialBatch) {
  BatchPlan drop{.samples = 10, .batch = 4, .last = LastBatch::drop};
  EXPECT_EQ(drop.num_batches(), 2);
  EXPECT_EQ(drop.rows_in(1), 4);
  BatchPlan pad{.samples = 10, .batch = 4, .last = LastBatch::pad};
  EXPECT_EQ(pad.num_batches(), 3);
  EXPECT_EQ(pad.rows_in(2), 2);
  EXPECT_EQ((BatchPlan{.samples = 8, .batch = 4, .last = LastBatch::pad}.num_batches()), 2);
}

// Over 3 ranks, an epoch of 100 samples in global batches of 12: 8 steps each, shards
// disjoint, covering the epoch but its 4 remainder samples (the order's last 4), a pure
// function of (seed, epoch), another one next epoch.
TEST(Sampler, RankShardsOfAnEpochAreDisjointAndCoverItButTheRemainder) {
  const int64_t samples = 100, global_batch = 12;
  const int world = 3;
  for (int64_t epoch : {0, 1}) {
    const std::vector<int64_t> order = epoch_order(/*seed=*/9, epoch, samples);
    std::vector<int64_t> seen;
    for (int rank = 0; rank < world; ++rank) {
      const std::vector<int64_t> rows = rank_epoch_rows(9, epoch, samples, global_batch, rank, world);
      ASSERT_EQ(rows.size(), 8u * 4u) << "rank " << rank;
      EXPECT_EQ(rows, rank_epoch_rows(9, epoch, samples, global_batch, rank, world));
      EXPECT_NE(rows, rank_epoch_rows(9, epoch + 2, samples, global_batch, rank, world));
      EXPECT_NE(rows, rank_epoch_rows(10, epoch, samples, global_batch, rank, world));
      // Step 1's rows are the rank's third of the order's second global batch.
      EXPECT_TRUE(std::equal(rows.begin() + 4, rows.begin() + 8, order.begin() + 12 + 4 * rank));
      seen.insert(seen.end(), rows.begin(), rows.end());
    }
    std::vector<int64_t> want(order.begin(), order.begin() + 96);
    std::sort(seen.begin(), seen.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(seen, want) << "epoch " << epoch;  // disjoint (no repeats) and complete
  }
  // One rank: the first full batches of the epoch's order.
  const std::vector<int64_t> order = epoch_order(9, 0, samples);
  EXPECT_EQ(rank_epoch_rows(9, 0, samples, global_batch, 0, 1),
            std::vector<int64_t>(order.begin(), order.begin() + 96));
  EXPECT_TRUE(rank_epoch_rows(9, 0, /*samples=*/11, global_batch, 0, world).empty());
  EXPECT_EQ(rank_share(12, 2, 3).offset, 8);
  EXPECT_EQ(rank_share(12, 2, 3).size, 4);
}

TEST(Gather, NormalizesAndZeroPads) {
  const std::string idx = write_text("b.idx", std::string("\0\0\x08\x02\0\0\0\x03\0\0\0\x02", 12) + std::string("\x00\x02\x04\x06\x08\xff", 6));
  auto c = idx_column(idx);
  ASSERT_TRUE(c.ok());
  c->normalization = {.divisor = 2, .mean = 1};
  Tensor out(Type{DType::f32, {3, 2}});
  const int64_t rows[] = {2, 0};
  gather_rows_into(*c, rows, 2, out);
  EXPECT_EQ(out.data<float>()[0], 3.0f);     // 8 / 2 - 1
  EXPECT_EQ(out.data<float>()[1], 126.5f);   // 255 / 2 - 1
  EXPECT_EQ(out.data<float>()[2], -1.0f);    // 0 / 2 - 1
  EXPECT_EQ(out.data<float>()[3], 0.0f);
  EXPECT_EQ(out.data<float>()[4], 0.0f);     // padding
  EXPECT_EQ(out.data<float>()[5], 0.0f);
  Tensor labels(Type{DType::i64, {3}});
  Column f64{f32_rows({0, 1, 2}, 1), "x", ""};
  const int64_t back[] = {2, 1, 0};
  gather_rows_into(f64, back, 3, labels);
  EXPECT_EQ(labels.data<int64_t>()[0], 2);
  EXPECT_EQ(labels.data<int64_t>()[2], 0);
}

}  // namespace
}  // namespace weft
