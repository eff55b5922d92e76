// The C++ text the AOT generator writes (generated_text.h): NAME.h, NAME.cc,
// NAME_factory.cc and the Programs' sources, from what generate_main.cc found.

#include "tools/aot/generated_text.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "codegen/program_source.h"
#include "ir/text_util.h"
#include "training/init.h"

namespace weft::aot {
namespace {

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
      rows_ << "    {" << codegen::cpp_quoted(v.name) << ", " << type_fields(v.type) << ", weft::InputKind::"
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
      rows_ << "    {" << codegen::cpp_quoted(s.name) << ", " << type_fields(s.type) << "},\n";
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
     << "  t.name = " << codegen::cpp_quoted(g.name) << ";\n"
     << "  t.options = " << codegen::cpp_quoted(g.options.to_flags()) << ";\n"
     << "  t.num_model_values = " << g.num_model_values << ";\n"
     << "  t.structural_hash = " << g.structural_hash << "ULL;\n"
     << "  t.lr = " << exact(g.lr) << ";\n"
     << "  t.momentum = " << exact(g.momentum) << ";\n"
     << "  t.accumulate_steps = " << g.accumulate_steps << ";\n"
     << "  t.checkpoint_batch = " << g.checkpoint_batch << ";\n";
  for (const auto& [path, lr] : g.group_lrs) {
    os << "  t.group_lrs.emplace_back(" << codegen::cpp_quoted(path) << ", " << exact(lr) << ");\n";
  }
  for (const CheckpointSchema::Subgraph& sub : g.subgraphs) {
    os << "  t.subgraphs.push_back({" << codegen::cpp_quoted(sub.path) << ", " << sub.hash << "ULL, "
       << codegen::cpp_quoted(sub.structure) << "});\n";
  }
  os
     << "  t.values = weft::aot::value_entries(" << (g.values.empty() ? "nullptr" : "kValues")
     << ", " << g.values.size() << ", kDims);\n"
     << "  t.step_inputs = " << step_inputs << ";\n"
     << "  t.eval_inputs = " << eval_inputs << ";\n"
     << "  t.eval_outputs = " << eval_outputs << ";\n"
     << "  t.backend = " << codegen::cpp_quoted(g.options.backend) << ";\n"
     << "  t.precision = " << dtype_cpp(g.options.precision) << ";\n"
     << "  t.loss_scale_keys = {" << codegen::cpp_quoted(kLossScaleState) << ", " << codegen::cpp_quoted(kGrowthTrackerState)
     << ", " << codegen::cpp_quoted(kSkippedStepsState) << "};\n";
  if (!g.onnx_refused.empty()) {
    os << "  t.onnx_refused = " << codegen::cpp_quoted(g.onnx_refused) << ";\n";
  } else {
    os << "  t.onnx.model.assign(reinterpret_cast<const char*>(" << weights_symbol(g) << " + "
       << g.onnx_offset << "), " << g.onnx.model.size() << ");\n";
    for (const onnx_io::WeightlessInitializer& init : g.onnx.initializers) {
      os << "  t.onnx.initializers.push_back({" << codegen::cpp_quoted(init.value) << ", " << bytes_string(init.header)
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

// A C++ string literal of `s`: raw-string pieces, which the compiler concatenates (as
// tests/cuda/gen_cases_main.cc writes its PTX).
std::string raw_literal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i += 16000) out += "R\"WEFT(" + s.substr(i, 16000) + ")WEFT\"\n";
  return out.empty() ? "\"\"" : out;
}

}  // namespace

std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

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
      os << "  /// " << codegen::cpp_quoted(specs[i].name) << ": " << t.to_string() << " ("
         << counted(t.shape.numel(), "element") << ").\n"
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

std::string source(const Generated& g) {
  std::ostringstream os;
  os << "// Generated by weft's AOT generator (tools/aot/generate_main.cc) for target " << g.name
     << ". Do not edit.\n#include " << codegen::cpp_quoted(g.include) << "\n\n#include <cmath>\n\n";
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
         ": the model a weft_binary trains. Do not edit.\n#include " + codegen::cpp_quoted(g.include) +
         "\n#include \"training/driver/trainable.h\"\n\n"
         "namespace weft::driver {\n\n"
         "StatusOr<std::unique_ptr<Trainable>> make_compiled_model(const ModelOptions& o) {\n"
         "  WEFT_ASSIGN_OR_RETURN(" + q + " m, " + q + "::create(o.seed, o.bind));\n"
         "  return std::unique_ptr<Trainable>(m.release());\n}\n\n"
         "std::string compiled_model_backend() { return " + codegen::cpp_quoted(g.options.backend) + "; }\n\n"
         "std::string compiled_model_precision() { return " + codegen::cpp_quoted(std::string(dtype_name(g.options.precision))) +
         "; }\n\n"
         "}  // namespace weft::driver\n\n"
         "const weft::aot::ModelTable& weft::aot::linked_model_table() { return " + q +
         "::table(); }\n";
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
  for (size_t k = 0; k < l.symbols.size(); ++k) out += (k ? ", " : "") + codegen::cpp_quoted(l.symbols[k]);
  return out + "};\n}\n";
}

}  // namespace weft::aot
