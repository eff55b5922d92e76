#pragma once
// What the mutation tests ask of every input that parsed: the rest of `weftc run`'s path
// (the default pipeline up to infer-types, the verifier, and for small graphs the
// reference interpreter on zero-filled inputs) ends in success or a clear error, never
// a crash, an escaping exception, an empty message or an unrepresentable type.
//
//   Tally tally("text mutations");
//   ... tally.check_parse(label, input, parse_graph(input, "g.wir")) ...
//   tally.print_summary();   // parsed / typed / ran / skipped counts

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/graph.h"
#include "ir/status.h"

namespace weft::robustness {

class Tally {
 public:
  explicit Tally(std::string name) : name_(std::move(name)) {}

  /// Records a test failure for `input` (escaped, so it can be pasted into a test); after
  /// the first few only counts them, so one bug does not print thousands of mutants.
  void fail(std::string_view label, std::string_view input, const std::string& problem);

  /// An error from parsing `input`: a non-empty message naming `filename`; with
  /// `need_position`, a line >= 1 and col >= 1 that lie within `input`.
  void check_parse_error(std::string_view label, std::string_view input, const Error& error,
                         std::string_view filename, bool need_position);

  /// Runs a parsed graph through pipeline, verifier and (when small) the interpreter,
  /// failing on anything but success or a well-formed error. Exceptions are caught and
  /// reported as failures.
  void check_graph(std::string_view label, std::string_view input, Graph g);

  int failures() const { return failures_; }
  /// One line of counts on stdout: inputs, parse errors, typed, ran, skipped as too large.
  void print_summary() const;

  int inputs = 0;

 private:
  void check_error(std::string_view label, std::string_view input, const Error& error,
                   std::string_view stage);

  std::string name_;
  int failures_ = 0;
  int parse_errors_ = 0;
  int parsed_ = 0;
  int typed_ = 0;
  int verified_ = 0;
  int ran_ = 0;
  int run_errors_ = 0;
  int skipped_large_ = 0;
  int unlocated_errors_ = 0;
  std::string first_unlocated_;
};

/// True when `type`'s element count or byte size does not fit in int64.
bool size_overflows(const Type& type);

}  // namespace weft::robustness
