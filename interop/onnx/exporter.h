#pragma once
// weft graphs as ONNX models: the inference graph of a model (its forward, built with
// BuildOptions{training=false}) written as an opset-17 ONNX model, IR version 8.
//
//   WEFT_ASSIGN_OR_RETURN(Model m, net->build({{"x", f32({8, 784})}}, {.training = false}));
//   WEFT_ASSIGN_OR_RETURN(auto values, initialize_parameter_map(m, /*seed=*/0));
//   WEFT_ASSIGN_OR_RETURN(onnx::ModelProto p, export_model(m, values));
//   WEFT_RETURN_IF_ERROR(write_onnx_model("mlp.onnx", p));
//
// What becomes what:
//  - data inputs stay graph inputs, named as in weft, with their static shapes;
//    parameters and state become initializers named as in weft (so that import_onnx
//    gives them back under the same names), holding the tensors of `values`;
//  - each node becomes ONNX nodes through one table (export_context.h; a row per op in
//    export_ops*.cc, one file per family, or the reason the op has no ONNX form); a
//    `fused` node's body is exported in its place and a `scan` becomes an ONNX `Scan`
//    (a loop with no xs: a `Loop` with a trip count) whose body reads the loop's consts
//    from the outer scope; loops with an early exit (`stop`) or skipped iterations
//    (`active`) are refused;
//  - the outputs keep weft's names where they can (an output that is an input, or a
//    value returned twice, goes through an Identity); each ONNX node is named after its
//    weft node (`relu/y`), with the weft location as its doc string.
// conv_backward_input, which a transposed convolution layer builds in the forward, is
// ONNX's ConvTranspose. Ops that only a training step has (assign, random_*, all_reduce,
// the other gradient ops) are refused, naming the op and where it was built, as are the
// few dtypes ONNX's ops lack where weft's results wrap (u8 pow, sum and matmul; i64 max
// pooling). Where an ONNX op lacks a dtype that weft computes in a wider one (bf16 in
// f32), the export casts to that dtype and back, which is exact.
// Written as formulas of other ops, rounding differently in the last bits: log1p(x) as
// Log(1 + x), rsqrt as Reciprocal(Sqrt(x)), gelu (opset 17 has no Gelu); these and mse
// compute f16 and bf16 in f32 and round once, as weft does.
// Every exported model passes ONNX's checker and its shape inference with type checks
// and node errors thrown; a model that does not is returned as an error (a weft bug).

#include <map>
#include <string>

#include "interop/onnx/proto.h"
#include "interop/onnx/weightless.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft {
class Model;
}

namespace weft::onnx_io {

/// The opset and IR version every export targets.
inline constexpr int kExportOpset = 17;
inline constexpr int kExportIrVersion = 8;

struct ExportOptions {
  /// The model's `producer_name`.
  std::string producer = "weft";
  /// The ONNX graph's name; empty: the weft graph's.
  std::string graph_name;
};

/// Exports `g` (typed: every value's type known) with each parameter and state input's
/// value from `values`, by input name. Errors: an op with no ONNX form (naming it and its
/// location), a missing or mistyped value, an untyped graph.
StatusOr<onnx::ModelProto> export_onnx(const Graph& g, const std::map<std::string, Tensor>& values,
                                       const ExportOptions& options = {});

/// Exports a built model's graph, which should be the inference forward
/// (BuildOptions{training=false}: a training build's dropout draws random numbers and is
/// refused).
StatusOr<onnx::ModelProto> export_model(const Model& model, const std::map<std::string, Tensor>& values,
                                        const ExportOptions& options = {});

/// Exports `g` as export_onnx does, with zeros for its parameters and state, then takes the
/// initializers out (weightless.h): what a training binary embeds to write its trained
/// model (--export-onnx). Errors: export_onnx's.
StatusOr<WeightlessModel> export_weightless(const Graph& g, const ExportOptions& options = {});

/// Runs ONNX's checker and its shape inference (types checked, node errors thrown) on
/// `model`, filling its value_info; errors carry ONNX's message.
Status check_onnx_model(onnx::ModelProto& model);

/// Serializes `model` to `path` atomically (formats/file_io.h). Errors name the path.
Status write_onnx_model(const std::string& path, const onnx::ModelProto& model);

}  // namespace weft::onnx_io
