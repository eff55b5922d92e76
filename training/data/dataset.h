#pragma once
// The sources a training run reads its samples from, shared by the AOT driver
// (training/driver) and the Trainer-based examples: IDX, .npy, safetensors and CSV files,
// each giving one Column (per-sample rows of one array), checked against one another
// before training starts, and the batches a run cuts from them.
//
//   WEFT_ASSIGN_OR_RETURN(Column x, npy_column("x.npy"));
//   WEFT_ASSIGN_OR_RETURN(std::vector<Column> t, csv_columns("t.csv", {{"a", "b"}, {"label"}}));
//   WEFT_RETURN_IF_ERROR(check_same_length({x, t[1]}));
//   WEFT_RETURN_IF_ERROR(check_class_labels(t[1], /*classes=*/10));
//   BatchPlan plan{.samples = x.size(), .batch = 64, .last = LastBatch::pad};
//   for (int64_t i = 0; i < plan.num_batches(); ++i) {
//     Tensor b(Type{DType::f32, {64, 784}});
//     gather_rows_into(x, order.data() + i * 64, plan.rows_in(i), b);  // zero padding
//   }
//
// Dimension 0 of a Column's array is the sample. A Column may keep its values in a narrow
// type (IDX images stay u8) with a normalization applied as rows are gathered
// ((value / divisor - mean) / std, torchvision's ToTensor then Normalize), so a data set
// is not widened to f32 before the first step.
// Every error names the file, and where it is about one value, its place (a CSV file's line, an
// array's row) and the column.

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft {

/// Per-sample rows of one array and where they came from.
struct Column {
  Tensor array;       ///< [samples, per-sample dims]
  std::string file;   ///< The file it was read from, for errors.
  std::string name;   ///< The tensor or CSV column(s), for errors ("" for IDX and .npy).
  /// How gathered rows are normalized: (array / divisor - mean) / std, in f32 arithmetic
  /// for f32 rows (as torchvision's ToTensor and Normalize compute, and FashionMnist),
  /// in f64 for any other dtype.
  struct Normalization {
    double divisor = 1;
    double mean = 0;
    double std = 1;
    bool identity() const { return divisor == 1 && mean == 0 && std == 1; }
    /// `value` normalized in f64.
    double apply(double value) const { return (value / divisor - mean) / std; }
  };
  Normalization normalization = {};
  /// For a CSV column, the file line each sample was read from (the header is line 1;
  /// blank lines hold no sample); empty for the other sources.
  std::vector<int64_t> lines = {};

  int64_t size() const { return array.rank() == 0 ? 0 : array.shape()[0]; }
  /// "file" or "file, column 'name'".
  std::string where() const;
  /// Where sample `i` is, for errors: "line N (sample i)" for a CSV column, "row i"
  /// (its index along dimension 0) for the others.
  std::string row(int64_t i) const;
};

/// An IDX file (training/data/idx.h), gzip-compressed or not; rank >= 1.
StatusOr<Column> idx_column(const std::string& path);
/// An .npy file (formats/npy.h); rank >= 1.
StatusOr<Column> npy_column(const std::string& path);
/// The tensor `tensor` of a safetensors file; an error names the file and the tensors it
/// holds when there is none of that name.
StatusOr<Column> safetensors_column(const std::string& path, const std::string& tensor);

/// Reads a CSV file of numbers: a header row of column names, then one sample per row,
/// fields separated by commas (surrounding spaces ignored, no quoting; a UTF-8 byte order
/// mark before the header is skipped). `groups` picks the columns by header name: each
/// group becomes one Column, [samples, group size], or [samples] for a group of one column
/// (a target): i64 when every value of the group is an integer, else f64; Column::lines
/// keeps each sample's line. Errors name the file and, for a value, its line (the header
/// being line 1) and column: a row with a different field count than the header, a field
/// that is not a number, a name the header lacks or names twice (the JSON readers refuse a
/// key given twice likewise), a path that is a directory.
StatusOr<std::vector<Column>> csv_columns(const std::string& path,
                                          const std::vector<std::vector<std::string>>& groups);

/// One source by its command-line spelling: `FILE.npy`, `FILE.safetensors:TENSOR`,
/// `FILE.csv:COLUMN[+COLUMN...]` (one CSV column gives [samples], several [samples, k]),
/// or an IDX file (`*.idx`, `*-ubyte`, `*-ubyte.gz`).
StatusOr<Column> source_column(const std::string& spec);

/// Sources of one data set must hold as many samples each: an error names the first
/// source and one that differs, with both lengths.
Status check_same_length(const std::vector<Column>& columns);

/// Class labels: every value of `labels` (rank 1) must be an integer in [0, classes); an
/// error names the file, the column, where the sample is (Column::row: a CSV file's line)
/// and the value.
Status check_class_labels(const Column& labels, int64_t classes);

/// The order in which epoch `epoch` visits `n` samples: a pure function of (seed, epoch,
/// n), so a run resumed at epoch k sees the data an uninterrupted run would. A
/// Fisher-Yates shuffle whose swap for position i (from n-1 down to 1) picks
/// j = r mod (i + 1), r the 64 bits (word 0 high, word 1 low) of Philox 4x32-10 block
/// (seed, offset = epoch, counter = i) (runtime/philox.h). The driver and the examples
/// (FashionMnist::order) shuffle with it.
std::vector<int64_t> epoch_order(uint64_t seed, int64_t epoch, int64_t n);

/// A data-parallel run's distributed sampler: the rows rank `rank` of `world` trains on
/// in epoch `epoch`, step after step. The epoch's order (epoch_order(seed, epoch,
/// samples)) is cut into samples / global_batch full global batches; the last
/// `samples mod global_batch` samples of that order are not visited this epoch (a
/// different remainder every epoch, so no sample is left out for good), so every rank
/// runs the same number of steps. Of global batch b the rank takes the positions
/// rank_share gives; step b of the epoch reads rows [b·S, (b+1)·S) of the result, S =
/// global_batch / world. The shards of one epoch are disjoint and depend only on (seed,
/// epoch) and the sizes. With world 1 it is the first full batches of epoch_order.
/// global_batch must be a multiple of world (shard_batch's rule, a check here).
std::vector<int64_t> rank_epoch_rows(uint64_t seed, int64_t epoch, int64_t samples, int64_t global_batch,
                                     int rank, int world);

/// Where rank `rank` of `world` finds its share of a global batch of `count` samples:
/// positions [offset, offset + size), offset = rank·count/world, size = count/world
/// (collective::shard_batch's split; count a multiple of world, a check).
struct RankShare {
  int64_t offset = 0, size = 0;
};
RankShare rank_share(int64_t count, int rank, int world);

/// What happens to the samples past the last full batch of an epoch.
enum class LastBatch {
  drop,  ///< Not visited this epoch (what the driver's training does).
  pad,   ///< A last batch of rows_in(i) < batch real rows, then zeros to the static shape.
};

/// The batches of an epoch of `samples` samples.
struct BatchPlan {
  int64_t samples = 0;
  int64_t batch = 1;
  LastBatch last = LastBatch::drop;

  int64_t num_batches() const;
  /// The real rows of batch `index` (batch, or fewer for a padded last batch).
  int64_t rows_in(int64_t index) const;
};

/// Rows `rows[0..count)` of `column` into `out` (dimension 0 >= count, the same per-sample
/// element count), converted to out's dtype through the column's normalization; rows of
/// `out` past `count` become zeros. Internal errors (mismatched shapes, a row out of range)
/// are checks, not user errors: callers check the data first.
void gather_rows_into(const Column& column, const int64_t* rows, int64_t count, Tensor& out);
/// A training batch as a Loader fills it (training/data/loader.h), for the driver and the
/// examples alike: of the global batch of samples `rows[0..count)`, rank `rank` of `world`
/// takes the rows rank_share gives, from each column into the tensor of `into` at its index,
/// converted and normalized as gather_rows_into does.
void gather_batch(const std::vector<Column>& columns, const int64_t* rows, int64_t count, int rank,
                  int world, std::vector<Tensor>& into);
/// The same for an array without a Column: its values as they are, or normalized.
void gather_rows_into(const Tensor& array, const int64_t* rows, int64_t count, Tensor& out,
                      const Column::Normalization& normalization = {});

}  // namespace weft
