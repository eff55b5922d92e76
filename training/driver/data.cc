#include "training/driver/data.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "training/data/dataset.h"
#include "training/data/fashion_mnist.h"
#include "formats/npy.h"
#include "ir/text_util.h"

namespace weft::driver {
namespace {

Error file_error(const std::string& file, std::string message) {
  return Error{std::move(message), Location::of_file(file)};
}

std::string describe(const TensorSpec& spec) {
  return "'" + spec.name + "' " + spec.type.to_string();
}

/// [n] followed by the per-sample dims of `type`.
Shape with_samples(const Type& type, int64_t n) {
  Shape s = type.shape;
  s.dims[0] = n;
  return s;
}

/// `src` ([N, ...]) as an array for `spec`: [N, spec's per-sample dims] in spec's dtype
/// (`src` itself, not a copy, when it already is one).
StatusOr<Tensor> to_model_array(Tensor src, const TensorSpec& spec, const std::string& file) {
  if (src.rank() < 1) {
    return file_error(file, "holds a scalar " + src.type().to_string() +
                                "; dimension 0 must be the sample");
  }
  const int64_t n = src.shape()[0];
  const int64_t per_sample = n == 0 ? 0 : src.numel() / n;
  if (n > 0 && per_sample != sample_elements(spec.type)) {
    Shape sample = src.shape();
    sample.dims.erase(sample.dims.begin());
    return file_error(file, "samples of shape " + sample.to_string() + " (" + counted(per_sample, "element") +
                                ") do not fit the model's input " + describe(spec) + " (" +
                                counted(sample_elements(spec.type), "element") + " per sample)");
  }
  if (is_floating(src.dtype()) && !is_floating(spec.type.dtype)) {
    return file_error(file, "holds " + std::string(dtype_name(src.dtype())) +
                                " values; the model's input " + describe(spec) +
                                " takes integers: save the array with an integer dtype");
  }
  const Type type{spec.type.dtype, with_samples(spec.type, n)};
  if (src.type() == type) return src;  // before allocating: Fashion-MNIST's images are 188 MB
  if (src.shape() != type.shape) {  // the same elements in the model's sample shape
    Tensor reshaped(Type{src.dtype(), type.shape});
    if (reshaped.bytes() > 0) std::memcpy(reshaped.raw_data(), src.raw_data(), reshaped.bytes());
    src = std::move(reshaped);
  }
  return src.dtype() == type.dtype ? src : to_dtype(src, type.dtype);
}

Status check_batched(const std::vector<TensorSpec>& step_inputs) {
  if (step_inputs.size() < 2) {
    return Error{"the model takes " + std::to_string(step_inputs.size()) +
                 " step inputs; a training step needs at least an input and a target"};
  }
  for (const TensorSpec& spec : step_inputs) {
    if (spec.type.shape.rank() < 1 || spec.type.shape[0] != step_inputs[0].type.shape[0]) {
      return Error{"the model's step input " + describe(spec) + " has no batch dimension " +
                   std::to_string(step_inputs[0].type.shape[0]) + " (that of " +
                   describe(step_inputs[0]) + ")"};
    }
  }
  return Status();
}

/// Labels (u8/i64 [N] class indices) as the target `spec` takes them.
StatusOr<Tensor> labels_as_target(const Tensor& labels, const TensorSpec& spec, int64_t classes) {
  const int64_t n = labels.shape()[0];
  if (spec.type.shape.rank() == 1) return to_dtype(labels, spec.type.dtype);
  if (spec.type.shape.rank() == 2 && spec.type.shape[1] == classes && is_floating(spec.type.dtype)) {
    Tensor out(Type{spec.type.dtype, {n, classes}});
    for (int64_t i = 0; i < n; ++i) {
      out.set_double(i * classes + static_cast<int64_t>(labels.get_double(i)), 1.0);
    }
    return out;
  }
  return Error{"the model's target " + describe(spec) + " is neither a class index per sample ([" +
               std::to_string(spec.type.shape[0]) + "]) nor a one-hot row of " + std::to_string(classes) +
               " classes ([" + std::to_string(spec.type.shape[0]) + "," + std::to_string(classes) +
               "], a float dtype)"};
}

StatusOr<Split> npy_split(const std::vector<std::string>& files,
                          const std::vector<TensorSpec>& step_inputs, const std::string& flag) {
  WEFT_RETURN_IF_ERROR(check_array_count(flag, files.size(), step_inputs));
  Split split;
  split.source = flag;
  std::vector<Column> columns;
  for (const std::string& spec : files) {
    WEFT_ASSIGN_OR_RETURN(Column column, source_column(spec));
    columns.push_back(std::move(column));
  }
  WEFT_RETURN_IF_ERROR(check_same_length(columns));
  for (size_t k = 0; k < columns.size(); ++k) {
    WEFT_ASSIGN_OR_RETURN(columns[k].array, to_model_array(std::move(columns[k].array), step_inputs[k],
                                                           columns[k].where()));
  }
  split.columns = std::move(columns);
  const Tensor& target = split.columns.back().array;
  if (target.rank() == 1 && is_integer(target.dtype())) {
    split.classes = to_dtype(target, DType::i64);
    split.classes_source = split.columns.back().where();
  }
  return split;
}

}  // namespace

Status check_array_count(const std::string& flag, size_t arrays, const std::vector<TensorSpec>& step_inputs) {
  if (arrays == step_inputs.size()) return Status();
  std::string names;
  for (const TensorSpec& s : step_inputs) names += (names.empty() ? "" : ", ") + describe(s);
  return Error{"--" + flag + " gives " + counted(static_cast<int64_t>(arrays), "array") +
               "; the model's step takes " + std::to_string(step_inputs.size()) +
               " (the inputs, then the target): " + names};
}

int64_t sample_elements(const Type& type) {
  int64_t n = 1;
  for (int i = 1; i < type.shape.rank(); ++i) n *= type.shape[i];
  return n;
}

StatusOr<Dataset> load_fashion_mnist(const std::string& directory,
                                     const std::vector<TensorSpec>& step_inputs) {
  WEFT_RETURN_IF_ERROR(check_batched(step_inputs));
  if (step_inputs.size() != 2) {
    return Error{"--data gives two step inputs (images, labels); the model's step takes " +
                 std::to_string(step_inputs.size()) + ": use --train=...npy files instead"};
  }
  const TensorSpec& image = step_inputs[0];
  if (!is_floating(image.type.dtype) || sample_elements(image.type) != FashionMnist::kPixels) {
    return Error{"Fashion-MNIST images are 784 floats (28x28 pixels) per sample; the model's input " +
                 describe(image) + " takes " + std::to_string(sample_elements(image.type)) + " " +
                 std::string(dtype_name(image.type.dtype)) + " per sample"};
  }
  // Checked before the files are read, so a wrong model fails fast.
  WEFT_RETURN_IF_ERROR(labels_as_target(Tensor(Type{DType::i64, {0}}), step_inputs[1],
                                        FashionMnist::kClasses).status());
  FashionMnistOptions options;
  options.directory = directory;
  options.directory_knob = "--data";
  options.normalize = true;  // as examples/fashion_mnist/train_loop.cc trains
  options.shuffle = false;   // the driver shuffles (epoch_order, the same permutation)
  WEFT_ASSIGN_OR_RETURN(FashionMnist data, FashionMnist::load(options));
  Dataset out;
  auto [train_columns, test_columns] = std::move(data).take_columns();
  for (bool train : {true, false}) {
    // The images stay u8 (normalized as batches are gathered), moved rather than copied;
    // the labels become the target.
    std::vector<Column>& columns = train ? train_columns : test_columns;
    const Tensor& labels = columns[1].array;
    WEFT_ASSIGN_OR_RETURN(Tensor target, labels_as_target(labels, step_inputs[1], FashionMnist::kClasses));
    Tensor classes(Type{DType::i64, {labels.numel()}});
    for (int64_t i = 0; i < labels.numel(); ++i) classes.data<int64_t>()[i] = labels.data<uint8_t>()[i];
    Split split;
    split.columns.reserve(2);
    split.columns.push_back(std::move(columns[0]));
    split.columns.push_back(Column{std::move(target), columns[1].file, ""});
    split.classes = std::move(classes);
    split.source = directory + (train ? "/train-*" : "/t10k-*");
    split.classes_source = columns[1].file;
    if (train) out.train = std::move(split);
    else out.test = std::move(split);
  }
  return out;
}

StatusOr<Dataset> load_npy(const std::vector<std::string>& train_files,
                           const std::vector<std::string>& test_files,
                           const std::vector<TensorSpec>& step_inputs) {
  WEFT_RETURN_IF_ERROR(check_batched(step_inputs));
  Dataset out;
  WEFT_ASSIGN_OR_RETURN(out.train, npy_split(train_files, step_inputs, "train"));
  if (!test_files.empty()) {
    WEFT_ASSIGN_OR_RETURN(Split test, npy_split(test_files, step_inputs, "test"));
    out.test = std::move(test);
  }
  return out;
}

Tensor gather_rows(const Column& column, const int64_t* rows, int64_t count, const Type& type) {
  WEFT_CHECK(type.shape.rank() >= 1 && count <= type.shape[0] &&
                 sample_elements(column.array.type()) == sample_elements(type),
             "gather_rows: " + column.array.type().to_string() + " rows into " + type.to_string());
  Tensor out(type);
  gather_rows_into(column, rows, count, out);  // zero-pads rows past `count`
  return out;
}

Tensor slice_rows(const Column& column, int64_t start, int64_t count, const Type& type) {
  std::vector<int64_t> rows(static_cast<size_t>(count));
  std::iota(rows.begin(), rows.end(), start);
  return gather_rows(column, rows.data(), count, type);
}

}  // namespace weft::driver
