// The driver's data pipeline: the shuffle (deterministic, FashionMnist's permutation),
// batches gathered into the model's shapes and padded, Fashion-MNIST in the model's
// layout and target form, .npy arrays converted to the model's dtypes, and the errors.
#include "training/driver/data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>

#include "training/data/fashion_mnist.h"
#include "formats/npy.h"
#include "formats/safetensors.h"

namespace weft::driver {
namespace {

std::string tmp(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

std::vector<TensorSpec> specs(Type x, Type y) { return {{"x", x}, {"target", y}}; }

std::string write(const std::string& name, const Tensor& t) {
  const std::string path = tmp(name);
  Status s = write_npy(path, t);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return path;
}

TEST(EpochOrder, IsADeterministicPermutationPerSeedAndEpoch) {
  std::vector<int64_t> a = epoch_order(/*seed=*/3, /*epoch=*/1, 1000);
  EXPECT_EQ(a, epoch_order(3, 1, 1000));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);
  EXPECT_NE(a, epoch_order(3, 2, 1000));
  EXPECT_NE(a, epoch_order(4, 1, 1000));
  EXPECT_TRUE(epoch_order(3, 0, 0).empty());
  EXPECT_EQ(epoch_order(3, 0, 1), std::vector<int64_t>{0});
}

TEST(EpochOrder, IsFashionMnistsShuffle) {
  // A driver run and examples/fashion_mnist's loop see the same batches.
  FashionMnistOptions options;
  options.seed = 7;
  StatusOr<FashionMnist> data = FashionMnist::load(options);
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  EXPECT_EQ(epoch_order(7, 3, data->train_size()), data->order(3));
  EXPECT_EQ(epoch_order(7, 0, data->train_size()), data->order(0));
}

TEST(GatherRows, ReshapesAndPads) {
  Tensor array(Type{DType::f32, {5, 4}});
  for (int64_t i = 0; i < array.numel(); ++i) array.data<float>()[i] = static_cast<float>(i);
  const int64_t rows[] = {3, 0};
  const Column column{array, "a.npy", ""};
  Tensor batch = gather_rows(column, rows, 2, Type{DType::f32, {3, 2, 2}});
  EXPECT_EQ(batch.type(), (Type{DType::f32, {3, 2, 2}}));
  EXPECT_EQ(batch.to_doubles(), (std::vector<double>{12, 13, 14, 15, 0, 1, 2, 3, 0, 0, 0, 0}));
  Tensor slice = slice_rows(column, 3, 2, Type{DType::f32, {4, 4}});  // the last two, padded
  EXPECT_EQ(slice.to_doubles(),
            (std::vector<double>{12, 13, 14, 15, 16, 17, 18, 19, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(FashionMnistData, InTheModelsLayoutNormalizedAsTheExamples) {
  StatusOr<Dataset> flat = load_fashion_mnist(kFashionMnistDirectory,
                                              specs(Type{DType::f32, {32, 784}}, Type{DType::i64, {32}}));
  ASSERT_TRUE(flat.ok()) << flat.error().to_string();
  StatusOr<Dataset> nchw = load_fashion_mnist(
      kFashionMnistDirectory, specs(Type{DType::f32, {32, 1, 28, 28}}, Type{DType::i64, {32}}));
  ASSERT_TRUE(nchw.ok()) << nchw.error().to_string();
  EXPECT_EQ(flat->train.size(), 60000);
  ASSERT_TRUE(flat->test.has_value());
  EXPECT_EQ(flat->test->size(), 10000);
  // The images stay the files' bytes, whatever the model's layout: nothing is widened
  // before the first batch.
  EXPECT_EQ(flat->train.columns[0].array.type(), (Type{DType::u8, {60000, 28, 28}}));
  EXPECT_EQ(nchw->train.columns[0].array.type(), (Type{DType::u8, {60000, 28, 28}}));
  EXPECT_EQ(nchw->test->columns[0].array.type(), (Type{DType::u8, {10000, 28, 28}}));

  // The same values and labels as examples/fashion_mnist/train_loop.cc trains on.
  FashionMnistOptions options;
  options.normalize = true;
  options.seed = 5;
  StatusOr<FashionMnist> reference = FashionMnist::load(options);
  ASSERT_TRUE(reference.ok());
  StatusOr<FashionMnistBatch> b = reference->batch(/*epoch=*/2, /*index=*/4, /*batch_size=*/32);
  ASSERT_TRUE(b.ok());
  std::vector<int64_t> order = epoch_order(5, 2, 60000);
  Tensor images = gather_rows(nchw->train.columns[0], order.data() + 4 * 32, 32, Type{DType::f32, {32, 1, 28, 28}});
  Tensor labels = gather_rows(nchw->train.columns[1], order.data() + 4 * 32, 32, Type{DType::i64, {32}});
  EXPECT_EQ(images.to_doubles(), b->images.to_doubles());
  EXPECT_EQ(labels, b->labels);
  EXPECT_EQ(*flat->test->classes, reference->test_set().labels);
  EXPECT_EQ(slice_rows(flat->test->columns[0], 0, 10000, Type{DType::f32, {10000, 784}}),
            reference->test_set().images);
}

TEST(FashionMnistData, OneHotTargets) {
  StatusOr<Dataset> data = load_fashion_mnist(kFashionMnistDirectory,
                                              specs(Type{DType::f32, {8, 784}}, Type{DType::f32, {8, 10}}));
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  const Tensor& target = data->train.columns[1].array;
  ASSERT_EQ(target.type(), (Type{DType::f32, {60000, 10}}));
  for (int64_t i : {0, 1, 59999}) {
    const int64_t label = data->train.classes->data<int64_t>()[i];
    for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(target.get_double(i * 10 + c), c == label ? 1.0 : 0.0);
  }
}

TEST(FashionMnistData, Errors) {
  auto error = [](Type x, Type y, const std::string& dir = kFashionMnistDirectory) {
    StatusOr<Dataset> d = load_fashion_mnist(dir, specs(x, y));
    return d.ok() ? std::string("ok") : d.error().to_string();
  };
  EXPECT_EQ(error(Type{DType::f32, {8, 3, 32, 32}}, Type{DType::i64, {8}}),
            "error: Fashion-MNIST images are 784 floats (28x28 pixels) per sample; the model's input "
            "'x' f32[8,3,32,32] takes 3072 f32 per sample");
  EXPECT_EQ(error(Type{DType::i32, {8, 784}}, Type{DType::i64, {8}}),
            "error: Fashion-MNIST images are 784 floats (28x28 pixels) per sample; the model's input "
            "'x' i32[8,784] takes 784 i32 per sample");
  EXPECT_EQ(error(Type{DType::f32, {8, 784}}, Type{DType::f32, {8, 5}}),
            "error: the model's target 'target' f32[8,5] is neither a class index per sample ([8]) nor a "
            "one-hot row of 10 classes ([8,10], a float dtype)");
  EXPECT_EQ(error(Type{DType::f32, {8, 784}}, Type{DType::i64, {4}}),
            "error: the model's step input 'target' i64[4] has no batch dimension 8 (that of 'x' f32[8,784])");
  std::string missing = error(Type{DType::f32, {8, 784}}, Type{DType::i64, {8}}, "/nonexistent");
  EXPECT_EQ(missing.rfind("/nonexistent/train-images-idx3-ubyte.gz: error: Fashion-MNIST file not found", 0), 0u)
      << missing;
  StatusOr<Dataset> three = load_fashion_mnist(
      kFashionMnistDirectory, {{"x", Type{DType::f32, {8, 784}}}, {"z", Type{DType::f32, {8, 4}}},
                               {"target", Type{DType::i64, {8}}}});
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.error().to_string(),
            "error: --data gives two step inputs (images, labels); the model's step takes 3: use "
            "--train=...npy files instead");
}

TEST(NpyData, ConvertedToTheModelsTypes) {
  Tensor x = Tensor::from_vector<double>({6, 2, 2}, std::vector<double>(24, 0.5));
  x.data<double>()[23] = 1.25;
  Tensor y = Tensor::from_vector<int32_t>({6}, {0, 1, 2, 0, 1, 2});
  const std::string xf = write("x.npy", x), yf = write("y.npy", y);
  StatusOr<Dataset> d = load_npy({xf, yf}, {}, specs(Type{DType::f32, {4, 4}}, Type{DType::i64, {4}}));
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_FALSE(d->test.has_value());
  EXPECT_EQ(d->train.size(), 6);
  EXPECT_EQ(d->train.columns[0].array.type(), (Type{DType::f32, {6, 4}}));
  EXPECT_EQ(d->train.columns[0].array.get_double(23), 1.25);
  EXPECT_EQ(d->train.columns[1].array.type(), (Type{DType::i64, {6}}));
  ASSERT_TRUE(d->train.classes.has_value());
  EXPECT_EQ(d->train.classes->to_doubles(), (std::vector<double>{0, 1, 2, 0, 1, 2}));

  // A float target (regression) has no classes; the test split is read the same way.
  Tensor r = Tensor::from_vector<float>({6, 1}, {1, 2, 3, 4, 5, 6});
  const std::string rf = write("r.npy", r);
  d = load_npy({xf, rf}, {xf, rf}, specs(Type{DType::f32, {2, 4}}, Type{DType::f32, {2, 1}}));
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_FALSE(d->train.classes.has_value());
  ASSERT_TRUE(d->test.has_value());
  EXPECT_EQ(d->test->columns[1].array, r);
}

TEST(CsvAndSafetensorsData, SourcesByFlagSpelling) {
  const std::string csv = tmp("d.csv");
  std::ofstream(csv) << "a,b,label\n0.5,1,2\n1.5,2,0\n2.5,3,1\n";
  const std::string st = tmp("d.safetensors");
  ASSERT_TRUE(write_safetensors(st, {{"x", Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6})}}).ok());
  const auto model = specs(Type{DType::f32, {2, 2}}, Type{DType::i64, {2}});
  StatusOr<Dataset> d = load_npy({csv + ":a+b", csv + ":label"}, {st + ":x", csv + ":label"}, model);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ(d->train.columns[0].array, Tensor::from_vector<float>({3, 2}, {0.5, 1, 1.5, 2, 2.5, 3}));
  EXPECT_EQ(d->train.columns[1].array, Tensor::from_vector<int64_t>({3}, {2, 0, 1}));
  ASSERT_TRUE(d->train.classes.has_value());
  EXPECT_EQ(d->test->columns[0].array, Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6}));
  StatusOr<Dataset> bad = load_npy({csv + ":a+b", csv + ":a"}, {}, model);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(), csv + ", column 'a': error: holds f64 values; the model's input 'target' "
                                           "i64[2] takes integers: save the array with an integer dtype");
}

TEST(NpyData, Errors) {
  const std::string x = write("ex.npy", Tensor(Type{DType::f32, {6, 4}}));
  const std::string y = write("ey.npy", Tensor(Type{DType::i64, {6}}));
  const std::string y5 = write("ey5.npy", Tensor(Type{DType::i64, {5}}));
  const std::string yf = write("eyf.npy", Tensor(Type{DType::f32, {6}}));
  const std::string scalar = write("es.npy", Tensor(Type{DType::f32, {}}));
  const auto model = specs(Type{DType::f32, {4, 4}}, Type{DType::i64, {4}});
  auto error = [&](const std::vector<std::string>& train, const std::vector<std::string>& test = {},
                   const std::vector<TensorSpec>& s = {}) {
    StatusOr<Dataset> d = load_npy(train, test, s.empty() ? model : s);
    return d.ok() ? std::string("ok") : d.error().to_string();
  };
  EXPECT_EQ(error({x, y}), "ok");
  EXPECT_EQ(error({x}), "error: --train gives 1 array; the model's step takes 2 (the inputs, then the "
                        "target): 'x' f32[4,4], 'target' i64[4]");
  EXPECT_EQ(error({x, y}, {x, y, y}), "error: --test gives 3 arrays; the model's step takes 2 (the inputs, "
                                      "then the target): 'x' f32[4,4], 'target' i64[4]");
  EXPECT_EQ(error({x, y5}), y5 + ": error: holds 5 samples; " + x +
                                " holds 6: the sources of one data set must hold as many samples each");
  EXPECT_EQ(error({x, yf}), yf + ": error: holds f32 values; the model's input 'target' i64[4] takes "
                                 "integers: save the array with an integer dtype");
  EXPECT_EQ(error({scalar, y}), scalar + ": error: holds a scalar f32[]; dimension 0 must be the sample");
  EXPECT_EQ(error({x, y}, {}, specs(Type{DType::f32, {4, 1, 28, 28}}, Type{DType::i64, {4}})),
            x + ": error: samples of shape [4] (4 elements) do not fit the model's input 'x' "
                "f32[4,1,28,28] (784 elements per sample)");
  EXPECT_EQ(error({x, y}, {}, specs(Type{DType::f32, {4, 1}}, Type{DType::i64, {4}})),
            x + ": error: samples of shape [4] (4 elements) do not fit the model's input 'x' "
                "f32[4,1] (1 element per sample)");
  const std::string missing = tmp("missing.npy");
  std::string e = error({missing, y});
  EXPECT_EQ(e.rfind(missing + ": error: ", 0), 0u) << e;
}

}  // namespace
}  // namespace weft::driver
