#include "codegen/program_source.h"

#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <sstream>
#include <tuple>
#include <vector>

#include "ir/status.h"

namespace weft::codegen {

std::string cpp_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\%03o", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {

// The enumerator of each op (`weft::Op::Matmul`), indexed like the enum.
const char* const kOpIds[] = {
#define WEFT_OP(id, name, arity, results, category, schema, math) #id,
#include "ir/ops.def"
#undef WEFT_OP
};

std::string exact(double v) {  // round-trips through the compiler's literal parser
  if (std::isnan(v)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v)) return v > 0 ? "std::numeric_limits<double>::infinity()"
                                  : "-std::numeric_limits<double>::infinity()";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", v);
  return buf;
}

std::string dtype(DType d) {
  return "weft::DType::" + std::string(d == DType::boolean ? "boolean" : dtype_name(d));
}

const char* attr_kind_enumerator(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "weft::AttrKind::Int";
    case AttrKind::Float: return "weft::AttrKind::Float";
    case AttrKind::Str: return "weft::AttrKind::Str";
    case AttrKind::Bool: return "weft::AttrKind::Bool";
    case AttrKind::DType: return "weft::AttrKind::DType";
    case AttrKind::Ints: return "weft::AttrKind::Ints";
    case AttrKind::Floats: return "weft::AttrKind::Floats";
  }
  return "";
}

const char* invocation_kind(Invocation::Kind k) {
  switch (k) {
    case Invocation::Kind::library: return "weft::Invocation::Kind::library";
    case Invocation::Kind::generated: return "weft::Invocation::Kind::generated";
    case Invocation::Kind::copy: return "weft::Invocation::Kind::copy";
    case Invocation::Kind::contraction: return "weft::Invocation::Kind::contraction";
    case Invocation::Kind::loop: return "weft::Invocation::Kind::loop";
  }
  return "";
}

// The tables of runtime/program_tables.h for one Program, each row already as C++.
class Tables {
 public:
  // Appends `v` to the int pool; returns its first index.
  int ints(const std::vector<int64_t>& v) {
    const int first = static_cast<int>(ints_.size());
    ints_.insert(ints_.end(), v.begin(), v.end());
    return first;
  }

  int floats(const std::vector<double>& v) {
    const int first = static_cast<int>(floats_.size());
    floats_.insert(floats_.end(), v.begin(), v.end());
    return first;
  }

  // Equal types share one row.
  int type(const Type& t) {
    auto [it, added] = type_index_.try_emplace(std::pair{t.dtype, t.shape.dims},
                                               static_cast<int>(types_.size()));
    if (added) {
      types_.push_back("{" + dtype(t.dtype) + ", " + std::to_string(t.shape.rank()) + ", " +
                       std::to_string(ints(t.shape.dims)) + "}");
    }
    return it->second;
  }

  // Appends rows for `refs`; returns the first.
  int buffers(const std::vector<BufferRef>& refs) {
    const int first = static_cast<int>(buffers_.size());
    for (const BufferRef& r : refs) {
      buffers_.push_back(std::string("{") +
                         (r.space == Space::input ? "weft::Space::input" : "weft::Space::arena") +
                         ", " + std::to_string(r.input) + ", " + std::to_string(r.offset) +
                         "LL, " + std::to_string(type(r.type)) + "}");
    }
    return first;
  }

  int attrs(const Attrs& attrs) {
    const int first = static_cast<int>(attrs_.size());
    for (const auto& [name, a] : attrs) {
      const AttrKind kind = weft::attr_kind(a);
      int64_t i = 0;
      double f = 0;
      std::string s = "nullptr";
      DType d = DType::f32;
      size_t count = 0;
      switch (kind) {
        case AttrKind::Int: i = std::get<int64_t>(a); break;
        case AttrKind::Float: f = std::get<double>(a); break;
        case AttrKind::Str: s = cpp_quoted(std::get<std::string>(a)); break;
        case AttrKind::Bool: i = std::get<bool>(a) ? 1 : 0; break;
        case AttrKind::DType: d = std::get<DType>(a); break;
        case AttrKind::Ints:
          i = ints(std::get<IntList>(a));
          count = std::get<IntList>(a).size();
          break;
        case AttrKind::Floats:
          i = floats(std::get<FloatList>(a));
          count = std::get<FloatList>(a).size();
          break;
      }
      attrs_.push_back("{" + cpp_quoted(name) + ", " + attr_kind_enumerator(kind) + ", " +
                       std::to_string(i) + "LL, " + exact(f) + ", " + s + ", " + dtype(d) +
                       ", " + std::to_string(count) + "}");
    }
    return first;
  }

  std::string source(const Program& p, const std::string& name, bool host_kernels);

 private:
  // One Program's own lists (its rows, whose pools are shared).
  struct Lists {
    std::vector<std::string> inputs, kernels, code, updates;
    int input_offsets = 0;
    int outputs = 0;
  };
  Lists lists(const Program& p);
  // The ProgramTables initializer of `p`, its lists named with `suffix`.
  std::string program_row(const Program& p, const Lists& l, const std::string& suffix,
                          const std::string& bodies, size_t num_bodies) const;

  std::vector<int64_t> ints_;
  std::vector<double> floats_;
  std::vector<std::string> types_, buffers_, attrs_;
  std::map<std::pair<DType, std::vector<int64_t>>, int> type_index_;
};

// `const ROW NAME[] = {...};`, or nothing for an empty table (C++ has no empty arrays).
void table(std::ostream& os, const char* row, const std::string& name,
           const std::vector<std::string>& rows) {
  if (rows.empty()) return;
  os << "const " << row << " " << name << "[] = {\n";
  for (const std::string& r : rows) os << "    " << r << ",\n";
  os << "};\n\n";
}

std::string pointer(const std::string& name, bool empty) { return empty ? "nullptr" : name; }

Tables::Lists Tables::lists(const Program& p) {
  Lists l;
  for (const ProgramInput& in : p.inputs) {
    l.inputs.push_back("{" + cpp_quoted(in.name) + ", " + std::to_string(type(in.type)) +
                       ", weft::InputKind::" + std::string(input_kind_name(in.kind)) + "}");
  }
  l.input_offsets = ints(p.input_offsets);
  for (const GeneratedKernel& k : p.kernels) {
    l.kernels.push_back("{" + cpp_quoted(k.name) + ", " + std::to_string(k.rows) + "LL, " +
                        std::to_string(k.row_length) + "LL}");
  }
  for (const Invocation& inv : p.code) {
    const Location& loc = inv.node.loc;
    WEFT_CHECK(static_cast<size_t>(inv.node.op) < std::size(kOpIds),
               "program_source: invocation '" + inv.label + "' has no valid op");
    const int attrs_first = attrs(inv.node.attrs);
    const int operands = buffers(inv.operands);
    const int results = buffers(inv.results);
    const int clear = buffers(inv.clear);
    l.code.push_back(
        std::string("{") + invocation_kind(inv.kind) + ", weft::Op::" +
        kOpIds[static_cast<int>(inv.node.op)] + ", " + std::to_string(attrs_first) + ", " +
        std::to_string(inv.node.attrs.size()) + ", " + cpp_quoted(loc.file) + ", " +
        std::to_string(loc.line) + ", " + std::to_string(loc.col) + ", " + cpp_quoted(loc.path) + ", " +
        std::to_string(inv.kernel) + ", " + std::to_string(inv.gemm_result) + ", " +
        std::to_string(operands) + ", " + std::to_string(inv.operands.size()) + ", " +
        std::to_string(results) + ", " + std::to_string(inv.results.size()) + ", " +
        std::to_string(clear) + ", " + std::to_string(inv.clear.size()) + ", " +
        cpp_quoted(inv.label) + ", " + std::to_string(inv.body) + "}");
  }
  for (const Update& u : p.updates) {
    l.updates.push_back("{" + std::to_string(u.input) + ", " + std::to_string(buffers({u.from})) +
                        "}");
  }
  l.outputs = buffers(p.outputs);
  return l;
}

std::string Tables::program_row(const Program& p, const Lists& l, const std::string& suffix,
                                const std::string& bodies, size_t num_bodies) const {
  std::ostringstream os;
  os << "{\n"
     << "    " << cpp_quoted(p.name) << ", " << p.arena_bytes << "LL, " << p.naive_bytes << "LL, "
     << p.lower_bound_bytes << "LL, " << p.inputs_bytes << "LL,\n"
     << "    " << pointer("kInts", ints_.empty()) << ", " << pointer("kFloats", floats_.empty())
     << ", " << pointer("kTypes", types_.empty()) << ", "
     << pointer("kBuffers", buffers_.empty()) << ", " << pointer("kAttrs", attrs_.empty())
     << ",\n"
     << "    " << pointer("kInputs" + suffix, l.inputs.empty()) << ", " << l.inputs.size() << ", "
     << l.input_offsets << ", " << p.input_offsets.size() << ",\n"
     << "    " << pointer("kKernels" + suffix, l.kernels.empty()) << ", " << l.kernels.size() << ",\n"
     << "    " << pointer("kCode" + suffix, l.code.empty()) << ", " << l.code.size() << ",\n"
     << "    " << pointer("kUpdates" + suffix, l.updates.empty()) << ", " << l.updates.size() << ",\n"
     << "    " << l.outputs << ", " << p.outputs.size() << ",\n"
     << "    " << pointer(bodies, num_bodies == 0) << ", " << num_bodies << ",\n}";
  return os.str();
}

std::string Tables::source(const Program& p, const std::string& name, bool host_kernels) {
  // The Programs' own lists first: they fill the pools.
  const Lists root = lists(p);
  std::vector<Lists> bodies;
  for (const Program& b : p.bodies) bodies.push_back(lists(b));

  std::ostringstream os;
  os << "// Generated by weft (codegen/program_source.h) from program @" << p.name
     << ". Do not edit.\n"
     << "#include <cstdint>\n#include <limits>\n#include <vector>\n\n"
     << "#include \"runtime/program_tables.h\"\n\n";
  if (host_kernels) {
    os << "extern \"C\" {\n";
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      os << "void " << kernel_symbol(name, static_cast<int>(k))
         << "(void* const* buffers, int64_t row_begin, int64_t row_end);\n";
    }
    os << "}\n\n";
  }
  os << "namespace {\n\n";
  if (!ints_.empty()) {
    os << "const int64_t kInts[] = {";
    for (size_t i = 0; i < ints_.size(); ++i) {
      os << (i % 8 ? " " : "\n    ") << ints_[i] << "LL,";
    }
    os << "\n};\n\n";
  }
  if (!floats_.empty()) {
    os << "const double kFloats[] = {";
    for (size_t i = 0; i < floats_.size(); ++i) os << "\n    " << exact(floats_[i]) << ",";
    os << "\n};\n\n";
  }
  os << "// dtype, rank, first dim in kInts\n";
  table(os, "weft::TypeRow", "kTypes", types_);
  os << "// space, input, arena offset, type\n";
  table(os, "weft::BufferRow", "kBuffers", buffers_);
  os << "// name, kind, int (or first in kInts / kFloats), float, string, dtype, count\n";
  table(os, "weft::AttrRow", "kAttrs", attrs_);
  auto lists_of = [&](const Lists& l, const std::string& suffix) {
    table(os, "weft::InputRow", "kInputs" + suffix, l.inputs);
    table(os, "weft::KernelRow", "kKernels" + suffix, l.kernels);
    os << "// kind, op, attrs (first, count), file, line, col, builder path, kernel, gemm_result,\n"
       << "// operands, results, clear (first, count in kBuffers), label, loop body\n";
    table(os, "weft::InvocationRow", "kCode" + suffix, l.code);
    table(os, "weft::UpdateRow", "kUpdates" + suffix, l.updates);
  };
  lists_of(root, "");
  if (!bodies.empty()) {
    std::vector<std::string> rows;
    for (size_t b = 0; b < bodies.size(); ++b) {
      const std::string suffix = "Body" + std::to_string(b);
      os << "// loop body " << b << "\n";
      lists_of(bodies[b], suffix);
      rows.push_back(program_row(p.bodies[b], bodies[b], suffix, "", 0));
    }
    table(os, "weft::ProgramTables", "kBodies", rows);
  }
  os << "const weft::ProgramTables kProgram = " << program_row(p, root, "", "kBodies", bodies.size())
     << ";\n\n";
  os << "}  // namespace\n\n"
     << "weft::Program " << name << "_program() { return weft::assemble_program(kProgram); }\n";
  if (host_kernels) {
    os << "\nstd::vector<weft::GeneratedFn> " << name << "_kernels() {\n  return {";
    for (size_t k = 0; k < p.kernels.size(); ++k) {
      os << (k ? ", " : "") << kernel_symbol(name, static_cast<int>(k));
    }
    os << "};\n}\n";
  }
  return os.str();
}

}  // namespace

std::string kernel_symbol(const std::string& name, int index) {
  return name + "_k" + std::to_string(index);
}

std::string program_to_cpp(const Program& p, const std::string& name, bool host_kernels) {
  return Tables().source(p, name, host_kernels);
}

}  // namespace weft::codegen
