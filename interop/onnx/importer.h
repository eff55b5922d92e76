#pragma once
// ONNX models in weft: as a module inside a flow, or as a graph of their own.
//
//   // C++: an exported PyTorch model as the first stage of a flow, trained as any flow.
//   auto net = FlowBuilder::from(onnx_io::OnnxModel("resnet18.onnx")).build({{"x", f32({32, 3, 32, 32})}});
//
//   // weftc import: the graph with its parameters as inputs, their values beside it.
//   WEFT_ASSIGN_OR_RETURN(ImportedGraph g, import_onnx("resnet18.onnx", {.dims = {{"batch", 32}}}));
//
// Each ONNX node becomes weft ops through the converter table (convert.h, ops/*.cc),
// with ONNX's broadcasting, attribute defaults and optional inputs. weft's shapes are
// static: a dimension the model leaves symbolic (`batch`) is bound from the caller's
// input shapes or ImportOptions::dims. The model's initializers become parameters named
// as in the model (floats: trained; others: state), starting from the model's values
// (Initializer::stored_values); initializers that only feed shapes, axes or pads are
// read at import time and never become inputs. Anything weft cannot express is refused
// naming the node, its op type and what is unsupported.
//
// Opsets 1 to kMaxOpset (17) of the default domain are read with each op's semantics
// at that opset; other domains are refused.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frontend/module.h"
#include "interop/onnx/reader.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/tensor.h"

namespace weft::onnx_io {

struct ImportOptions {
  /// Sizes of the model's symbolic dimensions (`batch` = 8).
  std::map<std::string, int64_t> dims = {};
  /// Shapes that replace the model's declared ones, by input name (import_onnx only;
  /// a module takes its inputs' shapes from the flow).
  std::map<std::string, Shape> input_shapes = {};
  /// OnnxModel: the first dimension of every data input takes the flow's size even where
  /// the model fixes it (a model exported at batch 1, trained at batch 32). Shapes the
  /// model computes from it follow; a constant that bakes the export batch in (a Reshape
  /// to [1, -1]) then fails naming the node and both shapes.
  bool free_batch_dimension = false;
  /// import_onnx: data inputs whose values are fixed at import time, by name (a model
  /// that takes a Reshape's shape or a Slice's starts as an input: weft's shapes are
  /// static). They are not inputs of the imported graph; their values are constants.
  std::map<std::string, Tensor> constant_inputs = {};
  /// import_onnx: when set, an import that fails because a value it needs at import time
  /// (a shape, axes, pads, a trip count, an If's condition) is computed at run time adds
  /// here the model's name for that value (a data input's name when the model feeds it
  /// directly: the input to give as constant_inputs). The conformance runner reads it.
  std::vector<std::string>* needs_constant = nullptr;
};

/// A module that emits the ONNX model at `path` (read when the flow is built). Its
/// inputs are the model's graph inputs that are not initializers, in order: the stream,
/// then the values named by `uses`; its output is the model's first output.
ModulePtr OnnxModel(const std::string& path, ImportOptions options = {});

/// The model as a graph of its own.
struct ImportedGraph {
  Graph graph;
  /// Every parameter and state input the import created, with its initializer
  /// (stored values).
  std::vector<ParamInfo> params;
  /// The first value of each of them, by name.
  std::map<std::string, Tensor> values;

  /// The graph's inputs in order, to run it: parameters and state from `values`, data
  /// inputs from `data` by name (see name_data_inputs). Errors name a data input `data`
  /// lacks.
  StatusOr<std::vector<Tensor>> inputs_with(const std::map<std::string, Tensor>& data) const;
};

/// `tensors` as the model's data inputs, by name: the i-th data input (initializers left
/// out) takes tensors[i], as ONNX's test data sets order their input_i.pb. Errors: another
/// number of tensors ("2 inputs given, the model takes 1").
StatusOr<std::map<std::string, Tensor>> name_data_inputs(const OnnxFile& file,
                                                         std::vector<Tensor> tensors);

/// Import options whose input_shapes are the shapes of `data`'s tensors.
ImportOptions options_with_shapes_of(const std::map<std::string, Tensor>& data,
                                     ImportOptions options = {});

/// Imports the model at `path`: data inputs named and ordered as the model's, typed
/// from their declared shapes with symbolic dims bound; outputs the model's outputs.
/// `training` chooses BatchNorm's and Dropout's training behaviour.
StatusOr<ImportedGraph> import_onnx(const std::string& path, const ImportOptions& options = {},
                                    bool training = false);
/// The same for a model already read.
StatusOr<ImportedGraph> import_onnx(const OnnxFile& file, const ImportOptions& options = {},
                                    bool training = false);

/// The model's graph inputs that are not initializers, in order.
std::vector<const onnx::ValueInfoProto*> onnx_data_inputs(const OnnxFile& file);

/// The model's data inputs (not initializers) with their types, symbolic dims bound
/// from `options` (an unbound one is an error naming the input and the dim).
StatusOr<std::vector<std::pair<std::string, Type>>> onnx_input_types(const OnnxFile& file,
                                                                     const ImportOptions& options);

}  // namespace weft::onnx_io
