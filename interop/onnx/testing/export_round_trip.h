#pragma once
// Test helper: a weft graph exported to ONNX, imported back and run on the reference
// interpreter beside the original, on the same inputs.
//
//   RoundTrip r = export_round_trip(g, params, {x});
//   if (r.importer_gap.empty()) EXPECT_TRUE(r.same) << r.why;

#include <map>
#include <string>
#include <vector>

#include "interop/onnx/reader.h"
#include "ir/graph.h"
#include "runtime/tensor.h"

namespace weft::onnx_io {

struct RoundTrip {
  /// The exported model (empty when the export failed: `error`).
  onnx::ModelProto model;
  /// The export's or the import's or a run's error, "" when none.
  std::string error;
  /// The import's error when it was an importer gap (is_importer_gap); then nothing was
  /// compared.
  std::string importer_gap;
  /// Whether every output of the import matched the original's within the tolerance.
  bool same = false;
  std::string why;  ///< The first difference.
};

/// Exports `g` with `values` (parameters and state by name), imports it back, runs both
/// with the data inputs `data` (in order) and compares the outputs within `tol`.
RoundTrip export_round_trip(const Graph& g, const std::map<std::string, Tensor>& values,
                            const std::vector<Tensor>& data, double tol);

/// Whether an import error is a gap of the importer that the export does not cause: an op
/// type with no converter yet, or LayerNormalization's stash_type 11 (f64 statistics,
/// what an f64 layer_norm exports as; ops/norm.cc takes only 1).
bool is_importer_gap(const std::string& message);

/// The model as a file the importer reads (serialized and parsed back, `exported.onnx`).
OnnxFile exported_file(const onnx::ModelProto& m);

}  // namespace weft::onnx_io
