#include "training/data/fashion_mnist.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <numeric>

#include "training/data/idx.h"

namespace weft {

struct FashionMnist::OrderCache {
  std::mutex mu;
  int64_t epoch = -1;
  std::vector<int64_t> order;
};

namespace {

Error file_error(const std::string& file, std::string message) {
  return Error{std::move(message), Location::of_file(file)};
}

// Reads one split: images (u8[N,28,28], normalized as gathered) and labels (u8[N]).
StatusOr<std::vector<Column>> read_split(const FashionMnistOptions& options, const std::string& split) {
  const std::string& dir = options.directory;
  const std::string image_path = dir + "/" + split + "-images-idx3-ubyte.gz";
  const std::string label_path = dir + "/" + split + "-labels-idx1-ubyte.gz";
  for (const std::string& path : {image_path, label_path}) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      return file_error(path, "Fashion-MNIST file not found (" + std::string(std::strerror(errno)) +
                                  "); install the Debian package dataset-fashion-mnist "
                                  "(tools/setup does), or set " + options.directory_knob +
                                  " to the directory that holds the four .gz files");
    }
  }
  WEFT_ASSIGN_OR_RETURN(Tensor im, read_idx(image_path));
  WEFT_ASSIGN_OR_RETURN(Tensor lb, read_idx(label_path));
  if (im.dtype() != DType::u8 || im.rank() != 3 || im.shape()[1] != 28 || im.shape()[2] != 28) {
    return file_error(image_path, "expected Fashion-MNIST images u8[N,28,28], found " +
                                      im.type().to_string());
  }
  if (lb.dtype() != DType::u8 || lb.rank() != 1) {
    return file_error(label_path, "expected Fashion-MNIST labels u8[N], found " + lb.type().to_string());
  }
  if (lb.shape()[0] != im.shape()[0]) {
    return file_error(label_path, std::to_string(lb.shape()[0]) + " labels for " +
                                      std::to_string(im.shape()[0]) + " images in " + image_path);
  }
  const uint8_t* l = lb.data<uint8_t>();
  for (int64_t i = 0; i < lb.numel(); ++i) {
    if (l[i] >= FashionMnist::kClasses) {
      return file_error(label_path, "label " + std::to_string(l[i]) + " of example " + std::to_string(i) +
                                        " is not a class in 0..9");
    }
  }
  // Gathered rows hold 784 pixels each, whatever the layout they are gathered into.
  Column images{std::move(im), image_path, ""};
  images.normalization = options.normalize ? Column::Normalization{255, kFashionMnistMean, kFashionMnistStd}
                                           : Column::Normalization{.divisor = 255};
  // Moved in, not listed in braces: an initializer list copies each Column, and copying
  // the images (47 MB for the training split) cost a second allocation and copy per load.
  std::vector<Column> split_columns;
  split_columns.reserve(2);
  split_columns.push_back(std::move(images));
  split_columns.push_back(Column{std::move(lb), label_path, ""});
  return split_columns;
}

}  // namespace

StatusOr<FashionMnist> FashionMnist::load(FashionMnistOptions options) {
  FashionMnist data;
  WEFT_ASSIGN_OR_RETURN(data.train_, read_split(options, "train"));
  WEFT_ASSIGN_OR_RETURN(data.test_, read_split(options, "t10k"));
  data.options_ = std::move(options);
  data.cache_ = std::make_shared<OrderCache>();
  return data;
}

std::vector<int64_t> FashionMnist::order(int64_t epoch) const {
  WEFT_CHECK(epoch >= 0, "FashionMnist::order: negative epoch " + std::to_string(epoch));
  if (options_.shuffle) return epoch_order(options_.seed, epoch, train_size());
  std::vector<int64_t> out(static_cast<size_t>(train_size()));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

int64_t FashionMnist::num_batches(int64_t batch_size) const {
  return batch_size <= 0 ? 0 : train_size() / batch_size;
}

FashionMnistBatch FashionMnist::gather(const std::vector<Column>& split, const int64_t* indices,
                                       int64_t count) const {
  Shape shape = options_.layout == ImageLayout::flat ? Shape{count, kPixels}
                                                     : Shape{count, 1, kImageSize, kImageSize};
  std::vector<Tensor> out{Tensor(Type{DType::f32, shape}), Tensor(Type{DType::i64, {count}})};
  gather_batch(split, indices, count, /*rank=*/0, /*world=*/1, out);
  return FashionMnistBatch{std::move(out[0]), std::move(out[1])};
}

StatusOr<FashionMnistBatch> FashionMnist::batch(int64_t epoch, int64_t index, int64_t batch_size) const {
  if (batch_size <= 0) {
    return Error{"FashionMnist::batch: batch_size must be positive, got " + std::to_string(batch_size)};
  }
  if (epoch < 0) return Error{"FashionMnist::batch: epoch must be >= 0, got " + std::to_string(epoch)};
  const int64_t batches = num_batches(batch_size);
  if (index < 0 || index >= batches) {
    return Error{"FashionMnist::batch: batch index " + std::to_string(index) +
                 " is out of range: an epoch has " + std::to_string(batches) + " batches of " +
                 std::to_string(batch_size) + " (" + std::to_string(train_size()) +
                 " training examples; the last partial batch is dropped)"};
  }
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (cache_->epoch != epoch) {
    cache_->order = order(epoch);
    cache_->epoch = epoch;
  }
  return gather(train_, cache_->order.data() + index * batch_size, batch_size);
}

StatusOr<FashionMnistBatch> FashionMnist::train_examples(const std::vector<int64_t>& indices) const {
  for (int64_t i : indices) {
    if (i < 0 || i >= train_size()) {
      return Error{"FashionMnist::train_examples: index " + std::to_string(i) + " is outside [0, " +
                   std::to_string(train_size()) + ")"};
    }
  }
  return gather(train_, indices.data(), static_cast<int64_t>(indices.size()));
}

FashionMnistBatch FashionMnist::train_set() const {
  std::vector<int64_t> all(static_cast<size_t>(train_size()));
  std::iota(all.begin(), all.end(), int64_t{0});
  return gather(train_, all.data(), train_size());
}

FashionMnistBatch FashionMnist::test_set() const {
  std::vector<int64_t> all(static_cast<size_t>(test_size()));
  std::iota(all.begin(), all.end(), int64_t{0});
  return gather(test_, all.data(), test_size());
}

}  // namespace weft
