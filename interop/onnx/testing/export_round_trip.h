#pragma once
// Test helper: a weft graph exported to ONNX, imported back and run on the reference
// interpreter beside the original, on the same inputs.
//
//   RoundTrip r = export_round_trip(g, params, {x});
//   if (r.missing_converter.empty()) EXPECT_TRUE(r.same) << r.why;

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
  /// The import's error when it only lacked a converter (the op type is not supported);
  /// then nothing was compared.
  std::string missing_converter;
  /// Whether every output of the import matched the original's within the tolerance.
  bool same = false;
  std::string why;  ///< The first difference.
};

/// Exports `g` with `values` (parameters and state by name), imports it back, runs both
/// with the data inputs `data` (in order) and compares the outputs within `tol`.
RoundTrip export_round_trip(const Graph& g, const std::map<std::string, Tensor>& values,
                            const std::vector<Tensor>& data, double tol);

/// The model as a file the importer reads (serialized and parsed back, `exported.onnx`).
OnnxFile exported_file(const onnx::ModelProto& m);

}  // namespace weft::onnx_io
