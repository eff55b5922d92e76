#include "training/data/fashion_mnist.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

namespace weft {
namespace {

bool have_dataset() {
  struct stat st;
  return ::stat(kFashionMnistDirectory, &st) == 0;
}

#define REQUIRE_DATASET()                                                                  \
  if (!have_dataset())                                                                     \
  GTEST_SKIP() << kFashionMnistDirectory                                                   \
               << " is missing: install the Debian package dataset-fashion-mnist (tools/setup)"

FashionMnist load_or_die(FashionMnistOptions options = {}) {
  auto data = FashionMnist::load(options);
  if (!data.ok()) {
    ADD_FAILURE() << data.error().to_string();
    std::abort();
  }
  return std::move(*data);
}

// Loaded once for the tests that only read them (each load decompresses 55 MB and each
// fresh page costs; the tests that need a fresh instance or other options load their own).
const FashionMnist& shared_plain() {
  static const FashionMnist data = load_or_die();
  return data;
}
const FashionMnist& shared_normalized() {
  static const FashionMnist data = load_or_die({.normalize = true});
  return data;
}

// Mean and population standard deviation of every element of the training set's images
// as gathered, in slices of 6000 examples (one 188 MB f32 copy of the set is what
// ShapesDTypesAndFirstTestLabels checks; the statistics need only every value once).
std::pair<double, double> training_set_stats(const FashionMnist& data) {
  double sum = 0, sum_sq = 0;
  int64_t count = 0;
  constexpr int64_t kSlice = 6000;
  for (int64_t first = 0; first < data.train_size(); first += kSlice) {
    std::vector<int64_t> rows(static_cast<size_t>(std::min(kSlice, data.train_size() - first)));
    std::iota(rows.begin(), rows.end(), first);
    auto slice = data.train_examples(rows);
    EXPECT_TRUE(slice.ok());
    if (!slice.ok()) return {0, 0};
    const float* x = slice->images.data<float>();
    for (int64_t i = 0; i < slice->images.numel(); ++i) {
      sum += x[i];
      sum_sq += static_cast<double>(x[i]) * x[i];
    }
    count += slice->images.numel();
  }
  EXPECT_EQ(count, 60000 * 784);
  const double mean = sum / count;
  return {mean, std::sqrt(sum_sq / count - mean * mean)};
}

TEST(FashionMnist, ShapesDTypesAndFirstTestLabels) {
  REQUIRE_DATASET();
  const FashionMnist& data = shared_plain();
  EXPECT_EQ(data.train_size(), 60000);
  EXPECT_EQ(data.test_size(), 10000);
  FashionMnistBatch test = data.test_set();
  EXPECT_EQ(test.images.type().to_string(), "f32[10000,784]");
  EXPECT_EQ(test.labels.type().to_string(), "i64[10000]");
  const int64_t* y = test.labels.data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(y, y + 5), (std::vector<int64_t>{9, 2, 1, 1, 6}));
  const float* x = test.images.data<float>();
  auto [lo, hi] = std::minmax_element(x, x + test.images.numel());
  EXPECT_EQ(*lo, 0.0f);
  EXPECT_EQ(*hi, 1.0f);
  FashionMnistBatch train = data.train_set();
  EXPECT_EQ(train.images.type().to_string(), "f32[60000,784]");
  // The first training image's pixel sum, as NumPy computes it from the same file.
  double first = 0;
  for (int p = 0; p < 784; ++p) first += train.images.data<float>()[p];
  EXPECT_NEAR(first, 299.0078431372549, 1e-3);

  auto batch = data.batch(0, 0, 32);
  ASSERT_TRUE(batch.ok()) << batch.error().to_string();
  EXPECT_EQ(batch->images.type().to_string(), "f32[32,784]");
  EXPECT_EQ(batch->labels.type().to_string(), "i64[32]");
}

TEST(FashionMnist, NchwLayout) {
  REQUIRE_DATASET();
  FashionMnist data = load_or_die({.layout = ImageLayout::nchw});
  FashionMnistBatch test = data.test_set();
  EXPECT_EQ(test.images.type().to_string(), "f32[10000,1,28,28]");
  auto batch = data.batch(2, 3, 16);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->images.type().to_string(), "f32[16,1,28,28]");
  // Same bytes as the flat layout.
  FashionMnistBatch flat = shared_plain().test_set();
  EXPECT_EQ(std::memcmp(flat.images.raw_data(), test.images.raw_data(), flat.images.bytes()), 0);
}

// The documented mean and std are the training set's statistics, and normalizing with
// them gives mean 0 and std 1.
TEST(FashionMnist, NormalizationStatistics) {
  REQUIRE_DATASET();
  auto [mean, std] = training_set_stats(shared_plain());
  EXPECT_NEAR(mean, kFashionMnistMean, 5e-5);  // 0.28604
  EXPECT_NEAR(std, kFashionMnistStd, 5e-5);    // 0.35302
  const FashionMnist& normalized = shared_normalized();
  auto [nmean, nstd] = training_set_stats(normalized);
  EXPECT_NEAR(nmean, 0.0, 2e-4);
  EXPECT_NEAR(nstd, 1.0, 2e-4);
  // test_set() returns a batch by value: keep it while reading its data (ASan found the
  // pointer into a destroyed temporary).
  const FashionMnistBatch test = normalized.test_set();
  const float* x = test.images.data<float>();
  EXPECT_FLOAT_EQ(x[0], (0.0f - 0.2860f) / 0.3530f);
}

// The images stay u8 in memory; a gathered pixel is (byte / 255 - mean) / std computed in
// f32, bit for bit what the examples trained on when the images were widened at load.
TEST(FashionMnist, ImagesStayBytesNormalizedInF32AsGathered) {
  REQUIRE_DATASET();
  const FashionMnist& data = shared_normalized();
  const Column& images = data.train_columns()[0];
  EXPECT_EQ(images.array.type(), (Type{DType::u8, {60000, 28, 28}}));
  EXPECT_EQ(data.train_columns()[1].array.type(), (Type{DType::u8, {60000}}));
  EXPECT_EQ(data.test_columns()[0].array.type(), (Type{DType::u8, {10000, 28, 28}}));
  // Every byte value, through gather_rows_into.
  Tensor bytes(Type{DType::u8, {256, 1}});
  for (int b = 0; b < 256; ++b) bytes.data<uint8_t>()[b] = static_cast<uint8_t>(b);
  std::vector<int64_t> rows(256);
  std::iota(rows.begin(), rows.end(), int64_t{0});
  Tensor out(Type{DType::f32, {256, 1}});
  gather_rows_into(Column{bytes, "bytes", "", images.normalization}, rows.data(), 256, out);
  for (int b = 0; b < 256; ++b) {
    const float x = static_cast<float>(b) / 255.0f;
    EXPECT_EQ(out.data<float>()[b], (x - kFashionMnistMean) / kFashionMnistStd) << b;
  }
}

TEST(FashionMnist, OrderDependsOnlyOnSeedAndEpoch) {
  REQUIRE_DATASET();
  FashionMnist a = load_or_die({.seed = 7}), b = load_or_die({.seed = 7}), c = load_or_die({.seed = 8});
  const std::vector<int64_t> a3 = a.order(3);
  // A fresh instance (a resumed run) reproduces any epoch's order, whatever came before.
  EXPECT_EQ(b.order(3), a3);
  EXPECT_NE(c.order(3), a3);
  EXPECT_NE(a.order(4), a3);
  std::vector<int64_t> sorted = a3;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 60000; ++i) ASSERT_EQ(sorted[i], i);
  // Pinned: the shuffle is part of reproducibility, like the checkpoint format.
  const std::vector<int64_t> s0 = shared_plain().order(0);
  EXPECT_EQ(std::vector<int64_t>(s0.begin(), s0.begin() + 5),
            (std::vector<int64_t>{3927, 15278, 10586, 2707, 25269}));
  // Batches of a resumed run match too.
  for (int64_t i : {0, 100, 467}) {
    auto x = a.batch(5, i, 128), y = b.batch(5, i, 128);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(x->images, y->images);
    EXPECT_EQ(x->labels, y->labels);
  }
  FashionMnist unshuffled = load_or_die({.shuffle = false});
  EXPECT_EQ(unshuffled.order(9)[12345], 12345);
}

TEST(FashionMnist, BatchesPartitionTheEpoch) {
  REQUIRE_DATASET();
  FashionMnist data = load_or_die({.seed = 3});
  EXPECT_EQ(data.num_batches(128), 468);  // 60000 / 128, the partial batch dropped
  EXPECT_EQ(data.num_batches(7000), 8);
  EXPECT_EQ(data.num_batches(0), 0);
  const int64_t bs = 7000;
  const std::vector<int64_t> order = data.order(1);
  std::set<int64_t> seen;
  for (int64_t i = 0; i < data.num_batches(bs); ++i) {
    std::vector<int64_t> slice(order.begin() + i * bs, order.begin() + (i + 1) * bs);
    for (int64_t e : slice) EXPECT_TRUE(seen.insert(e).second) << "example " << e << " repeats";
    auto batch = data.batch(1, i, bs);
    auto expected = data.train_examples(slice);
    ASSERT_TRUE(batch.ok() && expected.ok());
    EXPECT_EQ(batch->images, expected->images) << "batch " << i;
    EXPECT_EQ(batch->labels, expected->labels) << "batch " << i;
  }
  EXPECT_EQ(seen.size(), 56000u);
  // Labels are balanced over the whole training set: 6000 per class (the labels column,
  // u8[60000], as read; gathering widens them unchanged, as the batches above show).
  std::vector<int64_t> per_class(10);
  const Tensor& labels = data.train_columns()[1].array;
  ASSERT_EQ(labels.numel(), 60000);
  for (int64_t i = 0; i < 60000; ++i) ++per_class[labels.data<uint8_t>()[i]];
  EXPECT_EQ(per_class, std::vector<int64_t>(10, 6000));
}

TEST(FashionMnist, BatchErrors) {
  REQUIRE_DATASET();
  const FashionMnist& data = shared_plain();
  auto err = [](const StatusOr<FashionMnistBatch>& r) { return r.ok() ? "ok" : r.error().to_string(); };
  EXPECT_EQ(err(data.batch(0, 8, 7000)),
            "error: FashionMnist::batch: batch index 8 is out of range: an epoch has 8 batches of "
            "7000 (60000 training examples; the last partial batch is dropped)");
  EXPECT_EQ(err(data.batch(0, -1, 10)),
            "error: FashionMnist::batch: batch index -1 is out of range: an epoch has 6000 "
            "batches of 10 (60000 training examples; the last partial batch is dropped)");
  EXPECT_EQ(err(data.batch(0, 0, 0)), "error: FashionMnist::batch: batch_size must be positive, got 0");
  EXPECT_EQ(err(data.batch(-1, 0, 10)), "error: FashionMnist::batch: epoch must be >= 0, got -1");
  EXPECT_EQ(err(data.train_examples({60000})),
            "error: FashionMnist::train_examples: index 60000 is outside [0, 60000)");
}

TEST(FashionMnist, MissingDirectory) {
  auto data = FashionMnist::load({.directory = "/nonexistent/fashion-mnist"});
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.error().to_string(),
            "/nonexistent/fashion-mnist/train-images-idx3-ubyte.gz: error: Fashion-MNIST file not "
            "found (No such file or directory); install the Debian package dataset-fashion-mnist "
            "(tools/setup does), or set FashionMnistOptions::directory to the directory that "
            "holds the four .gz files");
}

}  // namespace
}  // namespace weft
