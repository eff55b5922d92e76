#include "tests/robustness/graph_checks.h"

#include <gtest/gtest.h>

#include <exception>
#include <iostream>

#include "ir/checked_math.h"
#include "ir/json.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "runtime/reference/interpreter.h"
#include "tests/robustness/mutator.h"

namespace weft::robustness {
namespace {

constexpr int kMaxPrintedFailures = 10;
// Graphs above these are type-checked but not run: the interpreter's naive kernels
// would take seconds (a 1024^3 matmul) or gigabytes on them.
constexpr int64_t kMaxRunBytes = int64_t{64} << 20;
constexpr double kMaxRunWork = 5e7;

// Why `g` is too large to run quickly, or empty. Assumes every value type fits in int64.
std::string too_large_to_run(const Graph& g) {
  double bytes = 0, work = 0;
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (const auto& t = g.value(v).type) bytes += static_cast<double>(t->numel()) * dtype_size(t->dtype);
  }
  for (const Node& node : g.nodes()) {
    if (node.results.empty()) continue;
    double out = static_cast<double>(g.type(node.result()).numel());
    double widest = 1;
    for (ValueId o : node.operands) widest = std::max(widest, static_cast<double>(g.type(o).numel()));
    work += node.info().category == OpCategory::Contraction ? out * widest : out + widest;
  }
  if (bytes > static_cast<double>(kMaxRunBytes)) return "values total " + std::to_string(bytes) + " bytes";
  if (work > kMaxRunWork) return "about " + std::to_string(work) + " operations";
  return "";
}

}  // namespace

bool size_overflows(const Type& type) { return !size_fits(type.dtype, type.shape.dims); }

void Tally::fail(std::string_view label, std::string_view input, const std::string& problem) {
  ++failures_;
  if (failures_ <= kMaxPrintedFailures) {
    ADD_FAILURE() << name_ << ", " << label << ": " << problem
                  << "\n  input (C++ literal, " << input.size() << " bytes):\n  "
                  << (input.size() <= 20000 ? escape(input)
                                            : escape(input.substr(0, 20000)) + " ...(cut)");
  } else if (failures_ == kMaxPrintedFailures + 1) {
    ADD_FAILURE() << name_ << ": more failures; only counting them from now on";
  }
}

void Tally::check_parse_error(std::string_view label, std::string_view input,
                              const Error& error, std::string_view filename,
                              bool need_position) {
  ++parse_errors_;
  if (error.message.empty()) fail(label, input, "parse error with an empty message");
  if (error.loc.file != filename) {
    fail(label, input, "parse error names file '" + error.loc.file + "', expected '" +
                           std::string(filename) + "': " + error.to_string());
  }
  if (!need_position) return;
  // The position must exist in the input: line 1..(newlines + 1), col within that line
  // (one past its end for an error at end of line or file).
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < input.size() && line < error.loc.line; ++i) {
    if (input[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  size_t line_end = input.find('\n', line_start);
  if (line_end == std::string_view::npos) line_end = input.size();
  if (error.loc.line < 1 || error.loc.col < 1 || line != error.loc.line ||
      static_cast<size_t>(error.loc.col) > line_end - line_start + 1) {
    fail(label, input, "parse error position " + std::to_string(error.loc.line) + ":" +
                           std::to_string(error.loc.col) + " is not within the input: " +
                           error.to_string());
  }
}

void Tally::check_error(std::string_view label, std::string_view input, const Error& error,
                        std::string_view stage) {
  if (error.message.empty()) fail(label, input, std::string(stage) + " error with an empty message");
  if (!error.loc.known()) {
    if (unlocated_errors_++ == 0) first_unlocated_ = std::string(stage) + ": " + error.to_string();
  }
}

void Tally::check_graph(std::string_view label, std::string_view input, Graph g) {
  ++parsed_;
  std::string stage = "print";
  try {
    // Whatever parsed must print, in both forms.
    (void)print_graph(g);
    (void)graph_to_json(g);
    stage = "infer-types";
    StatusOr<bool> typed = default_pipeline().run_until(g, "infer-types");
    if (!typed.ok()) return check_error(label, input, typed.error(), stage);
    ++typed_;
    stage = "verify";
    Status verified = verify(g);
    if (!verified.ok()) return check_error(label, input, verified.error(), stage);
    ++verified_;
    for (ValueId v = 0; v < g.num_values(); ++v) {
      const auto& type = g.value(v).type;
      if (type && size_overflows(*type)) {
        return fail(label, input, "infer-types accepted %" + g.value(v).name + ": " +
                                      type->to_string() +
                                      ", whose size in bytes overflows int64 (Shape::numel "
                                      "and Type::bytes wrap); it should be a user error");
      }
    }
    if (std::string why = too_large_to_run(g); !why.empty()) {
      ++skipped_large_;
      return;
    }
    stage = "reference::run";
    std::vector<Tensor> inputs;
    for (const Input& in : g.inputs()) inputs.emplace_back(*g.value(in.value).type);
    StatusOr<reference::RunResult> ran = reference::run(g, inputs);
    if (!ran.ok()) {
      ++run_errors_;
      if (ran.error().message.empty()) fail(label, input, "reference::run error with an empty message");
      return;
    }
    ++ran_;
    if (ran->outputs.size() != g.outputs().size()) {
      fail(label, input, "reference::run returned " + std::to_string(ran->outputs.size()) +
                             " outputs for " + std::to_string(g.outputs().size()));
    }
  } catch (const std::exception& e) {
    fail(label, input, "exception escaped from " + stage + ": " + e.what());
  } catch (...) {
    fail(label, input, "unknown exception escaped from " + stage);
  }
}

void Tally::print_summary() const {
  std::cout << name_ << ": " << inputs << " inputs, " << parse_errors_ << " parse errors, "
            << parsed_ << " parsed, " << typed_ << " typed, " << verified_ << " verified, "
            << ran_ << " ran (" << run_errors_ << " run errors, " << skipped_large_
            << " too large to run), " << unlocated_errors_ << " errors without a location"
            << (first_unlocated_.empty() ? "" : " (first: " + first_unlocated_ + ")") << ", "
            << failures_ << " failures\n";
}

}  // namespace weft::robustness
