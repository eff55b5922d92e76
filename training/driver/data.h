#pragma once
// The training driver's data pipeline: a split's arrays in the model's types, the
// per-epoch shuffle, and batches gathered (and padded) to a Trainable's static shapes.
//
//   WEFT_ASSIGN_OR_RETURN(Dataset data, load_fashion_mnist(dir, model.step_inputs()));
//   std::vector<int64_t> order = epoch_order(shuffle_seed, epoch, data.train.size());
//   Tensor x = gather_rows(data.train.columns[0], order.data() + i * B, B,
//                          model.step_inputs()[0].type);
//
// A Split holds one Column (training/data/dataset.h) per step input, dimension 0 the
// sample: a batch is rows gathered into a tensor of the input's type. Fashion-MNIST's
// images stay u8 and are normalized to the input's float type as they are gathered;
// .npy, safetensors and CSV arrays are converted to the input's dtype when loaded.
// Per-sample shapes only need the same element count (a Fashion-MNIST image is 784
// pixels, read as [784] or [1,28,28] alike).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "training/data/dataset.h"
#include "training/driver/trainable.h"
#include "runtime/tensor.h"

namespace weft::driver {

/// One split of a data set.
struct Split {
  /// One column per step input (the network's inputs, then the target), each
  /// [samples, as many elements per sample as that input]; gathered into the input's
  /// dtype (the target's column already holds it).
  std::vector<Column> columns;
  /// The class index of each sample (i64[samples]) when the target is a class (class
  /// indices, or one-hot rows made from them); absent for other targets. Sample i is
  /// row i of the target column (`columns.back().row(i)` says where it was read).
  std::optional<Tensor> classes;
  /// Where the split came from, for messages.
  std::string source;
  /// Where `classes` came from ("FILE" or "FILE, column 'NAME'"), for errors about a label;
  /// empty: `source`.
  std::string classes_source;

  int64_t size() const { return columns.empty() ? 0 : columns[0].size(); }
};

struct Dataset {
  Split train;
  std::optional<Split> test;  ///< Absent when no test split was given.
};

/// Fashion-MNIST (or MNIST) from the IDX files in `directory`: the images kept as u8,
/// normalized as the examples do ((x/255 - 0.2860) / 0.3530) as batches are gathered. The model must take two step inputs: images
/// (a float type with 784 elements per sample) and a target that is either a class index
/// per sample ([B], any integer or float dtype) or a one-hot row ([B,10], float).
StatusOr<Dataset> load_fashion_mnist(const std::string& directory,
                                     const std::vector<TensorSpec>& step_inputs);

/// .npy arrays, one per step input (`test_files` may be empty: no test split). Each
/// file's dimension 0 is the sample; the rest must hold as many elements as the input's
/// per-sample shape. Values are converted to the input's dtype; floats are not turned
/// into integers. A target of class indices ([B], an integer dtype) also gives `classes`.
StatusOr<Dataset> load_npy(const std::vector<std::string>& train_files,
                           const std::vector<std::string>& test_files,
                           const std::vector<TensorSpec>& step_inputs);

/// ok when `--flag` gives `arrays` arrays, one per step input; otherwise the error naming
/// both counts and the inputs (the loaders and the driver's early check share it).
Status check_array_count(const std::string& flag, size_t arrays, const std::vector<TensorSpec>& step_inputs);

/// training/data/dataset.h's: the per-epoch shuffle, FashionMnist::order's permutation.
using ::weft::epoch_order;

/// Rows `rows[0..count)` of `column` as a tensor of `type` (dimension 0 is the batch,
/// >= count; rows past `count` are zero padding), converted and normalized
/// (gather_rows_into). `column` must have `type`'s per-sample element count.
Tensor gather_rows(const Column& column, const int64_t* rows, int64_t count, const Type& type);

/// Consecutive rows [start, start + count) of `column`, padded to `type` likewise.
Tensor slice_rows(const Column& column, int64_t start, int64_t count, const Type& type);

/// The per-sample element count of a batched type (the product of dims after the first).
int64_t sample_elements(const Type& type);

}  // namespace weft::driver
