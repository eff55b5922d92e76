// The AOT generator: linked with a model source (tools/aot/model.h) into a tool by the
// weft_library macro (tools/aot/weft.bzl), built for the target (which must be the build
// machine) and run by the macro's WeftGenerate action at build time.
//
//   NAME_generator --name=NAME --class=ns::Class --include=pkg/NAME.h
//       --header=NAME.h --source=NAME.cc --factory=NAME_factory.cc
//       --step_source=NAME_step.cc --eval_source=NAME_eval.cc --weights=NAME_weights.inc
//       --object=NAME.o
//       --batch=128 --loss=cross_entropy --optimizer=adam --lr=0.001 ... [--precision=bf16]
//
// It builds the training step exactly as Trainer::compile does (it compiles a Trainer on
// the reference backend and takes its step graph, parameter table and optimizer slots;
// at --precision, its autocast and, for f16, its loss scaling),
// builds the eval-mode forward as Trainer::evaluate does, and lowers both for --backend
// (its codegen::Target's `lower`, codegen/targets.h: the Programs the JIT path runs).
// What is device-specific it asks that Target and its runtime Backend, never the name:
// how the kernels travel (Target::aot_code),
//   object  every kernel of both Programs compiled into one object file (--object;
//           Target::compile_object, for --cpu): cpu;
//   module  each Program's kernels as one module, written into its source as a string
//           constant with the kernels' entry symbols (no object file, no --object):
//           cuda, PTX;
// whether the typed buffers are the executors' own (Backend::host_input_data) and which
// ops the device would refuse (Backend::check_program). It writes:
//   NAME_step.cc / NAME_eval.cc   the Programs (codegen/program_source.h), + the module
//   NAME.h / NAME.cc              the ModelTable (training/aot/compiled_model.h) and a
//                                 typed class over CompiledModel (typed input buffers)
//   NAME_factory.cc               driver::make_compiled_model, for weft_binary
//   NAME_weights.inc              the bytes of stored initializers (an imported model's
//                                 weights) and of the eval forward as an ONNX model
//                                 without its weights (--export-onnx), which NAME.cc
//                                 embeds with `.incbin`
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/program_source.h"
#include "codegen/targets.h"
#include "frontend/training.h"
#include "interop/onnx/exporter.h"
#include "runtime/backend.h"
#include "runtime/collective/communicator.h"
#include "formats/file_io.h"
#include "training/init.h"
#include "training/step_inputs.h"
#include "tools/aot/model.h"
#include "tools/aot/options.h"

namespace weft::aot {
namespace {

constexpr const char* kTarget = kTargetInput;  // training/step_inputs.h

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

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// A C++ string literal of any bytes, each escaped in octal (which, unlike \x, ends after
// three digits), and its length: `std::string(LITERAL, N)`.
std::string bytes_string(const std::string& bytes) {
  std::string out = "std::string(\"";
  char buf[8];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "\\%03o", c);
    out += buf;
  }
  return out + "\", " + std::to_string(bytes.size()) + ")";
}

std::string exact(double v) {
  if (std::isinf(v)) return v > 0 ? "HUGE_VAL" : "-HUGE_VAL";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);
  return buf;
}

std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

std::string dtype_cpp(DType d) {
  return "weft::DType::" + std::string(d == DType::boolean ? "boolean" : dtype_name(d));
}

// The C++ element type of a buffer (f16/bf16 as their raw 16 bits).
std::string element_cpp(DType d) {
  switch (d) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f16:
    case DType::bf16: return "uint16_t";
    case DType::i32: return "int32_t";
    case DType::i64: return "int64_t";
    case DType::u8: return "uint8_t";
    case DType::boolean: return "bool";
  }
  return "void";
}

std::string initializer_cpp(const Initializer& i) {
  return "weft::Initializer{static_cast<weft::Initializer::Kind>(" +
         std::to_string(static_cast<int>(i.kind)) + "), " + exact(i.a) + ", " + exact(i.b) + ", " +
         exact(i.low) + ", " + exact(i.high) + ", " + exact(i.gain) +
         ", static_cast<weft::Initializer::FanMode>(" + std::to_string(static_cast<int>(i.mode)) +
         "), nullptr}";  // stored values: from the row (ValueRow::stored)
}

// The accessor name of a batch tensor: `x`, `input_0`; the step's target is `target`.
std::string accessor(const std::string& name) {
  return name == kTarget ? "target" : identifier(name);
}

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

std::string header(const Generated& g) {
  std::ostringstream os;
  os << "// Generated by weft's AOT generator (tools/aot/generate_main.cc) for target " << g.name
     << ". Do not edit.\n// Compile options: " << g.options.to_flags() << "\n"
     << "// Backend: " << g.options.backend << "\n"
     << "// Precision: " << dtype_name(g.options.precision) << "\n";
  if (!g.refused.empty()) {
    os << "// Not yet runnable on " << g.target->device << " (the " << g.target->name
       << " executor refuses the step):\n//   ";
    for (char c : g.refused) os << (c == '\n' ? std::string("\n//   ") : std::string(1, c));
    os << "\n";
  }
  os << "#pragma once\n\n#include <cstdint>\n#include <memory>\n\n"
     << "#include \"training/aot/compiled_model.h\"\n\n";
  if (!g.ns.empty()) os << "namespace " << g.ns << " {\n\n";
  os << "/// The model of " << g.name << ", compiled ahead of time for " << g.options.backend
     << ". Typed buffers are\n/// "
     << (g.host_buffers() ? "the executors' own input buffers"
                          : "host staging buffers that run_step() / run_eval() upload to " + g.target->device)
     << ": write a batch there, then run_step() / run_eval().\n"
     << "class " << g.cls << " {\n public:\n"
     << "  /// Binds the compiled Programs and initializes every value from `seed` (the JIT\n"
     << "  /// Trainer's values for the same seed). num_threads 0: $WEFT_NUM_THREADS or every core.\n"
     << "  static weft::StatusOr<" << g.cls << "> create(uint64_t seed = 0, int num_threads = 0);\n"
     << "  /// With CompiledModel's options: data parallelism (a communicator).\n"
     << "  static weft::StatusOr<" << g.cls << "> create(uint64_t seed,\n"
     << "                                           const weft::aot::CompiledModelOptions& options);\n"
     << "  /// The Programs, parameter table and tensor specs.\n"
     << "  static const weft::aot::ModelTable& table();\n\n"
     << "  /// The untyped model: step(), evaluate(), set_lr(), save(), load(), values().\n"
     << "  weft::aot::CompiledModel& model() { return *model_; }\n"
     << "  std::unique_ptr<weft::aot::CompiledModel> release() { return std::move(model_); }\n\n";
  auto buffers = [&](const std::vector<TensorSpec>& specs, const char* prefix,
                     const char* fn) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const Type& t = specs[i].type;
      os << "  /// " << quoted(specs[i].name) << ": " << t.to_string() << " (" << t.shape.numel()
         << " elements).\n"
         << "  " << element_cpp(t.dtype) << "* " << prefix << accessor(specs[i].name) << "_data() {\n"
         << "    return static_cast<" << element_cpp(t.dtype) << "*>(model_->" << fn << "(" << i
         << "));\n  }\n";
    }
  };
  if (g.step != nullptr) {
    os << "  // ---- The training step (batch " << g.options.batch << ").\n";
    buffers(g.step_inputs, "", "step_input_data");
    os << "  /// One step on the batch in the buffers above; returns the loss.\n"
       << "  weft::StatusOr<double> run_step() { return model_->run_step(); }\n"
       << "  void set_lr(double lr) { model_->set_lr(lr); }\n\n";
  }
  os << "  // ---- The eval-mode forward.\n";
  buffers(g.eval_inputs, "eval_", "eval_input_data");
  os << "  weft::Status run_eval() { return model_->run_eval(); }\n";
  for (size_t i = 0; i < g.eval_outputs.size(); ++i) {
    os << "  /// Output " << i << " of the last run_eval(): " << g.eval_outputs[i].type.to_string()
       << ".\n  weft::Tensor eval_output_" << i << "() const { return model_->eval_output(" << i
       << "); }\n";
  }
  os << "\n private:\n  std::unique_ptr<weft::aot::CompiledModel> model_;\n};\n";
  if (!g.ns.empty()) os << "\n}  // namespace " << g.ns << "\n";
  return os.str();
}

// The symbol of the embedded weights file.
std::string weights_symbol(const Generated& g) { return "weft_" + g.symbol + "_weights"; }

// The rows of training/aot/compiled_model.h (ValueRow, TensorSpecRow), their dims in one
// pool (kDims), in the order source() writes them.
class TableRows {
 public:
  /// kValues: one row per value (name, type, kind, initializer, Philox stream, stored bytes).
  void values(const Generated& g) {
    if (g.values.empty()) return;  // C++ has no empty arrays
    rows_ << "// name, dtype, rank, first dim in kDims, kind, initializer, Philox stream\n"
          << "// (parameter_stream(name))\nconst weft::aot::ValueRow kValues[] = {\n";
    for (const ValueEntry& v : g.values) {
      rows_ << "    {" << quoted(v.name) << ", " << type_fields(v.type) << ", weft::InputKind::"
            << input_kind_name(v.kind) << ",\n     " << initializer_cpp(v.init) << ",\n     "
            << parameter_stream(v.name) << "ULL";
      if (v.stored_offset >= 0) {
        rows_ << ", " << weights_symbol(g) << " + " << v.stored_offset << ", " << v.type.bytes() << "ULL";
      } else {
        rows_ << ", nullptr, 0";
      }
      rows_ << "},  // " << v.init.to_string() << "\n";
    }
    rows_ << "};\n";
  }

  /// The rows of `list` as array `array`; returns the call that builds them.
  std::string specs(const std::vector<TensorSpec>& list, const std::string& array) {
    if (list.empty()) return std::string("{}");
    rows_ << "\nconst weft::aot::TensorSpecRow " << array << "[] = {\n";
    for (const TensorSpec& s : list) {
      rows_ << "    {" << quoted(s.name) << ", " << type_fields(s.type) << "},\n";
    }
    rows_ << "};\n";
    return "weft::aot::tensor_specs(" + array + ", " + std::to_string(list.size()) + ", kDims)";
  }

  /// kDims, then the rows.
  std::string text() const {
    std::ostringstream os;
    os << "const int64_t kDims[] = {";
    for (size_t i = 0; i < dims_.size(); ++i) os << (i % 8 ? " " : "\n    ") << dims_[i] << "LL,";
    if (dims_.empty()) os << "0LL";  // no empty arrays either
    os << "\n};\n\n" << rows_.str();
    return os.str();
  }

 private:
  std::string type_fields(const Type& t) {
    const std::string f = dtype_cpp(t.dtype) + ", " + std::to_string(t.shape.rank()) + ", " +
                          std::to_string(dims_.size());
    dims_.insert(dims_.end(), t.shape.dims.begin(), t.shape.dims.end());
    return f;
  }

  std::vector<int64_t> dims_;
  std::ostringstream rows_;
};

// The accessors of the Programs (and their kernels) that NAME_step.cc and NAME_eval.cc
// define.
void declare_programs(std::ostringstream& os, const Generated& g) {
  for (const char* part : {"step", "eval"}) {
    if (std::string(part) == "step" && g.step == nullptr) continue;
    os << "weft::Program " << g.symbol << "_" << part << "_program();\n";
    if (g.object()) {
      os << "std::vector<weft::GeneratedFn> " << g.symbol << "_" << part << "_kernels();\n";
    } else {
      os << "const char* " << g.symbol << "_" << part << "_ptx();\n"
         << "std::vector<std::string> " << g.symbol << "_" << part << "_symbols();\n";
    }
  }
}

// The stored initializers and the ONNX model, embedded by the assembler.
void write_weights_asm(std::ostringstream& os, const Generated& g) {
  if (g.weights.empty()) return;
  // .incbin, not an array literal: a model's weights (tens of MB) compile in no time.
  os << "\n// The stored initializers (an imported model's weights) and the ONNX model: " << g.weights.size()
     << " bytes of " << g.name << "_weights.inc, embedded by the assembler.\n"
     << "asm(\".pushsection .rodata\\n.balign 64\\n.globl " << weights_symbol(g) << "\\n"
     << weights_symbol(g) << ":\\n.incbin \\\"" << g.weights_path
     << "\\\"\\n.popsection\\n\");\n"
     << "extern \"C\" const unsigned char " << weights_symbol(g) << "[];\n";
}

// make_table(): the ModelTable's fields, from the rows (`step_inputs`, `eval_inputs`,
// `eval_outputs`: TableRows::specs' calls) and the facts the generator found.
void write_make_table(std::ostringstream& os, const Generated& g, const std::string& step_inputs,
                      const std::string& eval_inputs, const std::string& eval_outputs) {
  os << "weft::aot::ModelTable make_table() {\n  weft::aot::ModelTable t;\n"
     << "  t.name = " << quoted(g.name) << ";\n"
     << "  t.options = " << quoted(g.options.to_flags()) << ";\n"
     << "  t.num_model_values = " << g.num_model_values << ";\n"
     << "  t.structural_hash = " << g.structural_hash << "ULL;\n"
     << "  t.lr = " << exact(g.lr) << ";\n"
     << "  t.momentum = " << exact(g.momentum) << ";\n"
     << "  t.accumulate_steps = " << g.accumulate_steps << ";\n"
     << "  t.checkpoint_batch = " << g.checkpoint_batch << ";\n";
  for (const auto& [path, lr] : g.group_lrs) {
    os << "  t.group_lrs.emplace_back(" << quoted(path) << ", " << exact(lr) << ");\n";
  }
  for (const CheckpointSchema::Subgraph& sub : g.subgraphs) {
    os << "  t.subgraphs.push_back({" << quoted(sub.path) << ", " << sub.hash << "ULL, "
       << quoted(sub.structure) << "});\n";
  }
  os
     << "  t.values = weft::aot::value_entries(" << (g.values.empty() ? "nullptr" : "kValues")
     << ", " << g.values.size() << ", kDims);\n"
     << "  t.step_inputs = " << step_inputs << ";\n"
     << "  t.eval_inputs = " << eval_inputs << ";\n"
     << "  t.eval_outputs = " << eval_outputs << ";\n"
     << "  t.backend = " << quoted(g.options.backend) << ";\n"
     << "  t.precision = " << dtype_cpp(g.options.precision) << ";\n"
     << "  t.loss_scale_keys = {" << quoted(kLossScaleState) << ", " << quoted(kGrowthTrackerState)
     << ", " << quoted(kSkippedStepsState) << "};\n";
  if (!g.onnx_refused.empty()) {
    os << "  t.onnx_refused = " << quoted(g.onnx_refused) << ";\n";
  } else {
    os << "  t.onnx.model.assign(reinterpret_cast<const char*>(" << weights_symbol(g) << " + "
       << g.onnx_offset << "), " << g.onnx.model.size() << ");\n";
    for (const onnx_io::WeightlessInitializer& init : g.onnx.initializers) {
      os << "  t.onnx.initializers.push_back({" << quoted(init.value) << ", " << bytes_string(init.header)
         << "});\n";
    }
  }
  for (const char* part : {"step", "eval"}) {
    if (std::string(part) == "step" && g.step == nullptr) continue;
    const std::string fn = g.symbol + "_" + part;
    os << "  t." << part << "_program = &" << fn << "_program;\n";
    if (g.object()) {
      os << "  t." << part << "_kernels = &" << fn << "_kernels;\n";
    } else {
      os << "  t." << part << "_ptx = " << fn << "_ptx();\n"
         << "  t." << part << "_symbols = " << fn << "_symbols();\n";
    }
  }
  os << "  return t;\n}\n";
}

// The class's table() and create() (the header declares them).
void write_class_methods(std::ostringstream& os, const std::string& q) {
  os << "const weft::aot::ModelTable& " << q << "::table() {\n"
     << "  static const weft::aot::ModelTable table = make_table();\n  return table;\n}\n\n"
     << "weft::StatusOr<" << q << "> " << q << "::create(uint64_t seed, int num_threads) {\n"
     << "  return create(seed, {.num_threads = num_threads});\n}\n\n"
     << "weft::StatusOr<" << q << "> " << q
     << "::create(uint64_t seed, const weft::aot::CompiledModelOptions& options) {\n"
     << "  " << q << " m;\n"
     << "  WEFT_ASSIGN_OR_RETURN(m.model_, weft::aot::CompiledModel::create(table(), seed, options));\n"
     << "  return m;\n}\n";
}

std::string source(const Generated& g) {
  std::ostringstream os;
  os << "// Generated by weft's AOT generator (tools/aot/generate_main.cc) for target " << g.name
     << ". Do not edit.\n#include " << quoted(g.include) << "\n\n#include <cmath>\n\n";
  declare_programs(os, g);
  TableRows rows;
  rows.values(g);
  const std::string step_inputs = rows.specs(g.step_inputs, "kStepInputs");
  const std::string eval_inputs = rows.specs(g.eval_inputs, "kEvalInputs");
  const std::string eval_outputs = rows.specs(g.eval_outputs, "kEvalOutputs");
  write_weights_asm(os, g);
  os << "\nnamespace {\n\n" << rows.text() << "\n";
  write_make_table(os, g, step_inputs, eval_inputs, eval_outputs);
  os << "\n}  // namespace\n\n";
  write_class_methods(os, g.ns.empty() ? g.cls : g.ns + "::" + g.cls);
  return os.str();
}

std::string factory(const Generated& g) {
  const std::string q = g.ns.empty() ? g.cls : g.ns + "::" + g.cls;
  return "// Generated by weft's AOT generator for target " + g.name +
         ": the model a weft_binary trains. Do not edit.\n#include " + quoted(g.include) +
         "\n#include \"training/driver/trainable.h\"\n\n"
         "namespace weft::driver {\n\n"
         "StatusOr<std::unique_ptr<Trainable>> make_compiled_model(const ModelOptions& o) {\n"
         "  WEFT_ASSIGN_OR_RETURN(" + q + " m, " + q + "::create(o.seed, o.bind));\n"
         "  return std::unique_ptr<Trainable>(m.release());\n}\n\n"
         "std::string compiled_model_backend() { return " + quoted(g.options.backend) + "; }\n\n"
         "std::string compiled_model_precision() { return " + quoted(std::string(dtype_name(g.options.precision))) +
         "; }\n\n"
         "}  // namespace weft::driver\n\n"
         "const weft::aot::ModelTable& weft::aot::linked_model_table() { return " + q +
         "::table(); }\n";
}

int fail(const std::string& message) {
  std::fprintf(stderr, "weft AOT generator: %s\n", message.c_str());
  return 1;
}

// A C++ string literal of `s`: raw-string pieces, which the compiler concatenates (as
// tests/cuda/gen_cases_main.cc writes its PTX).
std::string raw_literal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i += 16000) out += "R\"WEFT(" + s.substr(i, 16000) + ")WEFT\"\n";
  return out.empty() ? "\"\"" : out;
}

// A Program's source: its tables, and in the module form its module and kernel symbols
// (the accessors are named _ptx and _symbols for every module format: ModelTable's
// fields).
std::string program_source(const Lowered& l, const std::string& fn, const codegen::Target& target) {
  if (target.aot_code == codegen::AotCode::object) return codegen::program_to_cpp(l.program, fn);
  std::string out = codegen::program_to_cpp(l.program, fn, /*host_kernels=*/false);
  out += "\n// The kernels of " + fn + "_program(): " + target.module_description + ".\n"
         "const char* " + fn + "_ptx() {\n  return\n" + raw_literal(l.module) + ";\n}\n\n"
         "std::vector<std::string> " + fn + "_symbols() {\n  return {";
  for (size_t k = 0; k < l.symbols.size(); ++k) out += (k ? ", " : "") + quoted(l.symbols[k]);
  return out + "};\n}\n";
}

// The generator's own flags: the output paths and names (the rest are CompileOptions).
const std::vector<std::string> kOwnFlags = {"name", "class", "include", "header", "source", "factory",
                                            "step_source", "eval_source", "weights", "object"};

// The values of the own flags in `args`; each is required but --object (the object form
// only).
Status read_paths(const std::vector<std::string>& args, std::map<std::string, std::string>& paths) {
  const std::vector<std::string> optional = {"object"};
  for (const std::string& a : args) {
    for (const std::string& f : kOwnFlags) {
      if (a.rfind("--" + f + "=", 0) == 0) paths[f] = a.substr(f.size() + 3);
    }
  }
  for (const std::string& f : kOwnFlags) {
    if (!paths.count(f) && std::find(optional.begin(), optional.end(), f) == optional.end()) {
      return Error{"--" + f + "=... is required (the weft_library macro passes it)"};
    }
  }
  return Status();
}

// The target, the names of the model and of its class, and where the files go.
Status name_outputs(Generated& g, const CompileOptions& options,
                    std::map<std::string, std::string>& paths) {
  g.target = *codegen::find_target(options.backend);  // options.cc admits the compiled targets
  if (g.object() != (paths.count("object") > 0)) {
    return Error{g.object() ? "--object=... is required for --backend=" + options.backend
                            : "--backend=" + options.backend + " writes no object file: drop --object"};
  }
  g.name = paths["name"];
  g.weights_path = paths["weights"];
  g.symbol = identifier(g.name);
  g.include = paths["include"];
  g.options = options;
  const std::string cls = paths["class"];
  const size_t colon = cls.rfind("::");
  g.ns = colon == std::string::npos ? "" : cls.substr(0, colon);
  g.cls = colon == std::string::npos ? cls : cls.substr(colon + 2);
  return Status();
}

// The table's facts about the model: its hashes and checkpoint schema, the optimizer's
// rates, and the values (its parameters; the optimizer slots follow in lower_step).
void describe_model(Generated& g, const Trainer& trainer, const OptimizerSpec& optimizer) {
  const Model& model = trainer.model();
  g.structural_hash = model.structural_hash();
  const CheckpointSchema schema = checkpoint_schema(model);
  g.subgraphs = schema.subgraphs;
  g.checkpoint_batch = schema.batch;
  g.lr = optimizer.lr;
  g.momentum = optimizer.first_momentum();
  g.accumulate_steps = optimizer.accumulate_steps;
  for (size_t i = 0; i < optimizer.groups.size(); ++i) {
    g.group_lrs.emplace_back(optimizer.groups[i].path, optimizer.group_spec(i).lr);
  }
  for (const ParamInfo& p : model.parameters()) {
    g.values.push_back({p.name, model.graph().type(p.value), p.kind, p.init});
  }
  g.num_model_values = static_cast<int>(g.values.size());
}

// The training step lowered for the target into `step`: the optimizer slots as values,
// the step's inputs, and whether the device refuses the Program.
Status lower_step(Generated& g, const Trainer& trainer, const std::vector<InputSpec>& inputs,
                  Lowered& step) {
  const Graph& step_graph = trainer.step_graph();
  std::map<std::string, Type> step_types;
  for (const Input& in : step_graph.inputs()) {
    step_types[step_graph.value(in.value).name] = step_graph.type(in.value);
  }
  for (const OptimizerSlot& s : trainer.optimizer_slots()) {
    g.values.push_back({s.name, step_types.at(s.name), InputKind::state, s.init});
  }
  for (const InputSpec& in : inputs) g.step_inputs.push_back({in.name, in.type});
  g.step_inputs.push_back({kTarget, step_types.at(kTarget)});
  StatusOr<Lowered> p = g.target->lower(step_graph);
  if (!p.ok()) return Error{"lowering the training step: " + p.error().to_string()};
  step = std::move(*p);
  g.step = &step.program;
  if (const Backend* device = g.target->runtime(); device->check_program != nullptr) {
    if (Status s = device->check_program(step.program); !s.ok()) g.refused = s.error().to_string();
  }
  return Status();
}

// The eval-mode forward at the eval batch, as Trainer::evaluate builds it, lowered into
// `eval`; its inputs and outputs go to the table, and it is exported as ONNX
// (--export-onnx): a model the exporter refuses still builds, and its binary refuses
// --export-onnx with the exporter's reason.
Status lower_eval(Generated& g, const ModelSource& src, const CompileOptions& options, Lowered& eval) {
  const int64_t eval_batch = options.eval_batch > 0 ? options.eval_batch : options.batch;
  std::vector<InputSpec> eval_specs = src.inputs;
  for (InputSpec& s : eval_specs) {
    if (s.type.shape.rank() > 0) s.type.shape.dims[0] = eval_batch;
  }
  BuildOptions eval_build;
  eval_build.training = false;
  StatusOr<Model> eval_model = src.net->build(eval_specs, eval_build);
  if (!eval_model.ok()) return Error{"building the eval forward: " + eval_model.error().to_string()};
  for (const InputSpec& in : eval_specs) g.eval_inputs.push_back({in.name, in.type});
  for (ValueId out : eval_model->graph().outputs()) {
    g.eval_outputs.push_back({"output." + std::to_string(g.eval_outputs.size()),
                              eval_model->graph().type(out)});
  }
  StatusOr<Lowered> p = g.target->lower(eval_model->graph());
  if (!p.ok()) return Error{"lowering the eval forward: " + p.error().to_string()};
  eval = std::move(*p);
  g.eval = &eval.program;

  StatusOr<onnx_io::WeightlessModel> onnx = onnx_io::export_weightless(eval_model->graph(), {.graph_name = g.name});
  if (onnx.ok()) {
    g.onnx = std::move(*onnx);
  } else {
    g.onnx_refused = onnx.error().to_string();
  }
  return Status();
}

// The weights file: each stored initializer, then the ONNX model, at 64-byte offsets.
void embed_weights(Generated& g) {
  for (ValueEntry& v : g.values) {
    if (v.init.kind != Initializer::Kind::Stored) continue;
    g.weights.resize((g.weights.size() + 63) / 64 * 64, '\0');
    v.stored_offset = static_cast<int64_t>(g.weights.size());
    g.weights += v.init.stored->bytes;
  }
  g.weights.resize((g.weights.size() + 63) / 64 * 64, '\0');
  g.onnx_offset = static_cast<int64_t>(g.weights.size());
  g.weights += g.onnx.model;
}

// Every file, written once all are made (the object form's object file compiled last).
Status write_outputs(const Generated& g, std::map<std::string, std::string>& paths,
                     const Lowered& step, const Lowered& eval) {
  std::vector<std::pair<std::string, std::string>> files = {
      {paths["weights"], g.weights},
      {paths["step_source"], g.step ? program_source(step, g.symbol + "_step", *g.target)
                                    : "// " + g.name + " is inference-only: no training step.\n"},
      {paths["eval_source"], program_source(eval, g.symbol + "_eval", *g.target)},
      {paths["header"], header(g)},
      {paths["source"], source(g)},
      {paths["factory"], factory(g)},
  };
  if (g.object()) {
    std::vector<codegen::NamedProgram> programs = {{g.symbol + "_eval", g.eval}};
    if (g.step != nullptr) programs.insert(programs.begin(), {g.symbol + "_step", g.step});
    StatusOr<std::string> object = g.target->compile_object(programs, g.options.cpu);
    if (!object.ok()) return Error{object.error().to_string()};
    files.push_back({paths["object"], *object});
  }
  for (const auto& [path, text] : files) {
    if (Status s = write_file_atomically(path, text); !s.ok()) return Error{s.to_string()};
  }
  return Status();
}

int run(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::map<std::string, std::string> paths;
  if (Status s = read_paths(args, paths); !s.ok()) return fail(s.error().message);
  StatusOr<CompileOptions> options = parse_compile_options(args, kOwnFlags);
  if (!options.ok()) return fail(options.error().to_string());
  Generated g;
  if (Status s = name_outputs(g, *options, paths); !s.ok()) return fail(s.error().message);

  StatusOr<ModelSource> src = weft_model(options->batch, options->dtype);
  if (!src.ok()) return fail("weft_model: " + src.error().to_string());
  StatusOr<LossSpec> loss = options->loss_spec();
  StatusOr<OptimizerSpec> optimizer = options->optimizer_spec();
  if (!loss.ok() || !optimizer.ok()) return fail("bad options");

  // The training step, built by the Trainer itself (reference backend: nothing is
  // compiled here), so its graph, parameter table and slots are the JIT path's. With
  // --data_parallel, the data-parallel step: an all_reduce mean on every gradient (after
  // the accumulator, on the window's last micro-batch only: append_optimizer) and on the
  // loss, which the binary runs through the communicator
  // it is given (CompiledModel::Options) — with one process they change nothing, so the
  // same library trains alone or under mpirun.
  // With --precision, the mixed-precision step the Trainer builds (autocast, and for f16
  // dynamic loss scaling, whose state the optimizer slots list).
  TrainOptions train{.seed = 0, .backend = "reference", .precision = options->precision};
  if (options->data_parallel) train.bind.communicator = collective::single_process();
  StatusOr<Trainer> trainer =
      Trainer::compile(src->net, src->inputs, *loss, *optimizer, train, src->where);
  if (!trainer.ok()) return fail(trainer.error().to_string());
  describe_model(g, *trainer, *optimizer);

  Lowered step, eval;
  if (!options->inference_only) {
    if (Status s = lower_step(g, *trainer, src->inputs, step); !s.ok()) return fail(s.error().message);
  }
  if (Status s = lower_eval(g, *src, *options, eval); !s.ok()) return fail(s.error().message);
  embed_weights(g);
  if (Status s = write_outputs(g, paths, step, eval); !s.ok()) return fail(s.error().message);
  std::printf("%s (%s): step %zu invocations, %zu kernels, arena %lld bytes; eval %zu invocations, "
              "%zu kernels; %zu values\n",
              g.name.c_str(), g.options.backend.c_str(), step.program.code.size(),
              step.program.kernels.size(), static_cast<long long>(step.program.arena_bytes),
              eval.program.code.size(), eval.program.kernels.size(), g.values.size());
  return 0;
}

}  // namespace
}  // namespace weft::aot

int main(int argc, char** argv) { return weft::aot::run(argc, argv); }
