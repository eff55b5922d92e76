#pragma once
// Internal to the AOT generator (generate_main.cc): what it found about a model
// (Generated) and the C++ text it writes from that (generated_text.cc): the model's
// header and source (its ModelTable and typed class), the factory, and each Program's
// source.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codegen/targets.h"
#include "frontend/training.h"
#include "interop/onnx/exporter.h"
#include "tools/aot/options.h"
#include "training/step_inputs.h"

namespace weft::aot {

inline constexpr const char* kTarget = kTargetInput;  // training/step_inputs.h

// What the generated ModelTable (training/aot/compiled_model.h) holds, on the generator's
// side. The generator does not link training/aot, so that editing it (or the training
// driver) leaves the generator binary, and so the generator action, unchanged.
struct ValueEntry {
  std::string name;
  Type type;
  InputKind kind;
  Initializer init;
  /// A stored initializer's offset in the weights file (NAME_weights.inc), or -1.
  int64_t stored_offset = -1;
};

struct TensorSpec {
  std::string name;
  Type type;
};

struct Generated {
  std::string name, symbol, cls, ns, include;
  /// The weights file: stored initializers' bytes, each 64-byte aligned, then the ONNX
  /// model's (empty if none), and its path as the compiler sees it (the assembler embeds
  /// it with .incbin).
  std::string weights, weights_path;
  /// The eval forward as ONNX without its weights (ModelTable::onnx), its offset in the
  /// weights file; or why it has no ONNX form.
  onnx_io::WeightlessModel onnx;
  int64_t onnx_offset = 0;
  std::string onnx_refused;
  CompileOptions options;
  std::vector<ValueEntry> values;
  int num_model_values = 0;
  uint64_t structural_hash = 0;
  std::vector<CheckpointSchema::Subgraph> subgraphs;
  int64_t checkpoint_batch = 0;
  std::vector<std::pair<std::string, double>> group_lrs;
  double lr = 0;
  double momentum = 0;
  int64_t accumulate_steps = 1;
  std::vector<TensorSpec> step_inputs, eval_inputs, eval_outputs;
  const Program* step = nullptr;
  const Program* eval = nullptr;
  const codegen::Target* target = nullptr;  ///< options.backend's entry.
  /// Whether the kernels travel as object code (else as one module per Program).
  bool object() const { return target->aot_code == codegen::AotCode::object; }
  /// Whether the typed buffers are the executors' own (else host staging buffers).
  bool host_buffers() const { return target->runtime()->host_input_data != nullptr; }
  /// Why the device would refuse the step (Backend::check_program), "" if it would not.
  std::string refused;
};

// One lowered Program and, in the module form, its module and kernel entry symbols.
using Lowered = codegen::LoweredProgram;

/// `s` made a C++ identifier: other characters as `_`, and a leading `_` before a digit.
std::string identifier(const std::string& s);
/// NAME.h: the typed class over CompiledModel.
std::string header(const Generated& g);
/// NAME.cc: the ModelTable's rows and make_table(), and the class's table() and create().
std::string source(const Generated& g);
/// NAME_factory.cc: driver::make_compiled_model, for weft_binary.
std::string factory(const Generated& g);
/// A Program's source (NAME_step.cc, NAME_eval.cc): its tables, and in the module form
/// its module and kernel symbols.
std::string program_source(const Lowered& l, const std::string& fn, const codegen::Target& target);

}  // namespace weft::aot
