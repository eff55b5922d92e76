#pragma once
// A small command-line parser for weftc's subcommands: `--name=value`, `--name value`,
// `-o value`, repeatable flags (`--input a=x.npy --input b=y.npy`), bare `--flag`
// booleans and positional arguments. Unknown flags are errors naming the flag and the
// subcommand's accepted flags.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/status.h"
#include "training/flag_values.h"

namespace weft::cli {

struct FlagSpec {
  FlagSpec(std::string name_in, std::string alias_in = "", bool takes_value_in = true,
           bool repeatable_in = false)
      : name(std::move(name_in)), alias(std::move(alias_in)), takes_value(takes_value_in),
        repeatable(repeatable_in) {}

  std::string name;  ///< Without dashes: "after", "out", "input".
  std::string alias; ///< Short form without dash ("o"), or empty.
  bool takes_value;
  bool repeatable;
};

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> flags;  ///< By long name.

  bool has(const std::string& name) const { return flags.count(name) > 0; }
  /// The last value given for `name`, or `fallback`.
  std::string get(const std::string& name, const std::string& fallback = "") const;
};

/// Parses `argv` (the arguments after the subcommand name) for `command`.
/// Errors start with `program command: ` ("weftc check: ...") and point at its --help; with
/// program empty (a bench worker, which prefixes its own name) they name neither.
StatusOr<Args> parse_args(const std::string& command, const std::vector<std::string>& argv,
                          const std::vector<FlagSpec>& specs,
                          const std::string& program = "weftc");

/// The one positional FILE argument of `command`; an error says how many were given.
StatusOr<std::string> one_file_argument(const std::string& command, const Args& args);

/// The value of `--NAME` as a whole number in [low, high], or `fallback` when it is not
/// given. Every integer flag of weftc is read here, by training/flag_values.h's checked
/// parser: "1.5", "-", "4294967296" for an int are errors naming the command and the flag.
StatusOr<int64_t> whole_number_flag(const Args& args, const std::string& command,
                                    const std::string& name, int64_t fallback, int64_t low,
                                    int64_t high);

/// training/flag_values.h's: relative paths against $BUILD_WORKING_DIRECTORY.
using ::weft::resolve_path;

/// An error when output `flag` ("-o", "--weights") names one of the files the command
/// reads (`inputs`, as the user wrote them: FILE, --params), the same file however it is
/// spelled (./m.onnx, a symbolic link), which writing the output would destroy:
/// `weftc import: -o names the file it reads, 'm.onnx'; writing it there would lose that
/// file: give the output another name`. Empty paths are never compared.
Status output_is_not_an_input(const std::string& command, const std::string& flag,
                              const std::string& output, const std::vector<std::string>& inputs);

}  // namespace weft::cli
