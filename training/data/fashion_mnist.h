#pragma once
// Fashion-MNIST (Xiao et al. 2017): 60000 training and 10000 test images of 28x28
// grey-level clothing pictures in 10 classes, read from the gzip-compressed IDX files
// that the Debian package `dataset-fashion-mnist` installs (tools/setup does).
//
//   WEFT_ASSIGN_OR_RETURN(FashionMnist data, FashionMnist::load({.normalize = true, .seed = 7}));
//   for (int64_t epoch = 0; epoch < 5; ++epoch) {
//     for (int64_t i = 0; i < data.num_batches(128); ++i) {
//       WEFT_ASSIGN_OR_RETURN(FashionMnistBatch b, data.batch(epoch, i, 128));
//       // b.images f32[128,784], b.labels i64[128]
//     }
//   }
//   FashionMnistBatch test = data.test_set();  // f32[10000,784], i64[10000]
//
// The images stay in memory as the files' bytes (u8), as training/data/dataset.h Columns
// (train_columns(), test_columns(): images, then labels) whose normalization turns a
// gathered pixel into f32 in [0, 1] (byte / 255), or with `normalize` (x - 0.2860) / 0.3530:
// the mean and (population) standard deviation of the training set's pixels in [0, 1],
// 0.28604 and 0.35302, computed in f32 as torchvision's ToTensor and Normalize do. So
// loading widens nothing; each batch is converted as it is gathered (gather_rows_into,
// gather_batch). The test set is never shuffled.
//
// The training order of an epoch is a pure function of (seed, epoch): dataset.h's
// epoch_order. A run resumed at epoch k sees exactly the data order it would have seen
// without stopping. Batches take consecutive slices of that order; the last partial
// batch of an epoch is dropped.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "training/data/dataset.h"
#include "runtime/tensor.h"

namespace weft {

/// Where Debian's dataset-fashion-mnist puts the files.
inline constexpr const char* kFashionMnistDirectory = "/usr/share/datasets/fashion-mnist";
/// The training set's pixel mean and standard deviation, pixels scaled to [0, 1].
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

/// The shape images come in.
enum class ImageLayout {
  flat,  ///< f32[N,784]
  nchw,  ///< f32[N,1,28,28]
};

struct FashionMnistOptions {
  /// The directory holding {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz.
  std::string directory = kFashionMnistDirectory;
  /// How the caller's user sets `directory`, for the missing-file error's hint: "--data"
  /// in the training driver and the examples.
  std::string directory_knob = "FashionMnistOptions::directory";
  /// (x - kFashionMnistMean) / kFashionMnistStd instead of x in [0, 1].
  bool normalize = false;
  ImageLayout layout = ImageLayout::flat;
  /// The seed of the per-epoch shuffle.
  uint64_t seed = 0;
  /// False: every epoch visits the training set in file order.
  bool shuffle = true;
};

/// Images (f32, in the chosen layout) and their labels (i64, 0..9).
struct FashionMnistBatch {
  Tensor images;
  Tensor labels;
};

class FashionMnist {
 public:
  static constexpr int64_t kImageSize = 28;
  static constexpr int64_t kPixels = 28 * 28;
  static constexpr int64_t kClasses = 10;

  /// Reads both splits. A missing file is an error naming it and the Debian package;
  /// a file that is not what Fashion-MNIST ships (wrong type or shape, labels out of
  /// 0..9, image and label counts that differ) is an error naming the file.
  static StatusOr<FashionMnist> load(FashionMnistOptions options = {});

  const FashionMnistOptions& options() const { return options_; }
  int64_t train_size() const { return train_[1].size(); }
  int64_t test_size() const { return test_[1].size(); }
  /// The splits as Columns: images (u8[N,28,28], normalized as gathered into f32 rows of
  /// 784 elements in any layout), then labels (u8[N], class indices 0..9).
  const std::vector<Column>& train_columns() const { return train_; }
  const std::vector<Column>& test_columns() const { return test_; }
  /// Both splits' Columns moved out ({train, test}), for a caller that keeps only them
  /// (copying the training images costs 47 MB of fresh memory); the instance is spent.
  std::pair<std::vector<Column>, std::vector<Column>> take_columns() && {
    return {std::move(train_), std::move(test_)};
  }

  /// The training set's example indices in the order epoch `epoch` visits them (see the
  /// top of this file); depends only on (seed, epoch). `epoch` must be >= 0.
  std::vector<int64_t> order(int64_t epoch) const;
  /// Full batches per epoch: train_size() / batch_size (0 when batch_size <= 0).
  int64_t num_batches(int64_t batch_size) const;
  /// Batch `index` of epoch `epoch`: examples order(epoch)[index * batch_size, ...).
  /// Errors for batch_size <= 0, a negative epoch, or an index outside
  /// [0, num_batches(batch_size)).
  StatusOr<FashionMnistBatch> batch(int64_t epoch, int64_t index, int64_t batch_size) const;
  /// Training examples by index (file order numbering); indices must be in range.
  StatusOr<FashionMnistBatch> train_examples(const std::vector<int64_t>& indices) const;
  /// The whole training set in file order (widened to f32: 188 MB).
  FashionMnistBatch train_set() const;
  /// The whole test set in file order.
  FashionMnistBatch test_set() const;

 private:
  struct OrderCache;
  FashionMnist() = default;
  FashionMnistBatch gather(const std::vector<Column>& split, const int64_t* indices, int64_t count) const;

  FashionMnistOptions options_;
  std::vector<Column> train_, test_;   // {images u8[N,28,28], labels u8[N]}
  std::shared_ptr<OrderCache> cache_;  // The last epoch's order, for batch().
};

}  // namespace weft
