#include "tools/weftc/args.h"

#include <filesystem>

namespace weft::cli {

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = flags.find(name);
  if (it == flags.end() || it->second.empty()) return fallback;
  return it->second.back();
}

StatusOr<Args> parse_args(const std::string& command, const std::vector<std::string>& argv,
                          const std::vector<FlagSpec>& specs, const std::string& program) {
  const std::string who = program.empty() ? "" : program + " " + command + ": ";
  const std::string help = program.empty() ? "" : " (see " + program + " " + command + " --help)";
  auto accepted = [&] {
    std::string list;
    for (const FlagSpec& s : specs) {
      list += (list.empty() ? "" : ", ") + std::string("--") + s.name;
      if (!s.alias.empty()) list += " (-" + s.alias + ")";
    }
    return list.empty() ? std::string("none") : list;
  };
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a[0] != '-') {
      args.positional.push_back(a);
      continue;
    }
    std::string body = a.substr(a[1] == '-' ? 2 : 1);
    std::string value;
    bool has_value = false;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      value = body.substr(eq + 1);
      body = body.substr(0, eq);
      has_value = true;
    }
    const FlagSpec* spec = nullptr;
    for (const FlagSpec& s : specs) {
      if (s.name == body || (!s.alias.empty() && s.alias == body)) spec = &s;
    }
    if (!spec) {
      return Error{who + "unknown flag '" + a + "'; accepted flags: " + accepted() + help};
    }
    if (spec->takes_value && !has_value) {
      if (i + 1 >= argv.size()) {
        return Error{who + "flag --" + spec->name + " needs a value"};
      }
      value = argv[++i];
    } else if (!spec->takes_value && has_value) {
      return Error{who + "flag --" + spec->name + " takes no value"};
    }
    // No flag means anything by an empty value: `-o ""` wrote a temporary file it could not
    // rename, `--backend=` checked nothing, `--after=` ran the whole pipeline.
    if (spec->takes_value && value.empty()) {
      return Error{who + "flag --" + spec->name + " needs a value, got an empty one" + help};
    }
    auto& slot = args.flags[spec->name];
    if (!spec->repeatable && !slot.empty()) {
      return Error{who + "flag --" + spec->name + " given twice"};
    }
    slot.push_back(value);
  }
  return args;
}

StatusOr<int64_t> whole_number_flag(const Args& args, const std::string& command,
                                    const std::string& name, int64_t fallback, int64_t low,
                                    int64_t high) {
  if (!args.has(name)) return fallback;
  const std::string text = args.get(name);
  const FlagNumber<int64_t> n = parse_whole_number(text);
  if (!n.ok() || n.value < low || n.value > high) {
    return Error{"weftc " + command + ": --" + name + " expects a whole number in [" +
                 std::to_string(low) + ", " + std::to_string(high) + "], got '" + text + "'"};
  }
  return n.value;
}

StatusOr<std::string> one_file_argument(const std::string& command, const Args& args) {
  if (args.positional.size() != 1) {
    return Error{"weftc " + command + ": expected one FILE argument, got " +
                 std::to_string(args.positional.size()) + " (see weftc " + command + " --help)"};
  }
  return args.positional[0];
}

Status output_is_not_an_input(const std::string& command, const std::string& flag,
                              const std::string& output, const std::vector<std::string>& inputs) {
  if (output.empty()) return Status();
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (input.empty() || !std::filesystem::equivalent(resolve_path(output), resolve_path(input), ec)) continue;
    return Error{"weftc " + command + ": " + flag + " names the file it reads, '" + input +
                 "'; writing it there would lose that file: give the output another name"};
  }
  return Status();
}

}  // namespace weft::cli
