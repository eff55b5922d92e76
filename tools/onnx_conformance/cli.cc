#include "tools/onnx_conformance/cli.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "formats/file_io.h"
#include "tools/onnx_conformance/conformance.h"
#include "tools/onnx_conformance/report.h"
#include "tools/onnx_conformance/runner.h"
#include "training/flag_values.h"

namespace weft::onnx_conformance {
namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

StatusOr<int> positive_int(const std::string& flag, const std::string& text, int high) {
  const FlagNumber<int64_t> n = parse_whole_number(text);
  if (!n.ok() || n.value < 1 || n.value > high) {
    return Error{"onnx_conformance: --" + flag + " expects a whole number in [1, " +
                 std::to_string(high) + "], got '" + text + "'"};
  }
  return static_cast<int>(n.value);
}

// The workspace's expected.json under `bazel run`, else the one below the current folder.
std::string default_expected_path() {
  const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  const std::string rel = "tools/onnx_conformance/expected.json";
  return ws != nullptr && *ws != '\0' ? std::string(ws) + "/" + rel : rel;
}

std::string verdicts(const CaseResult& r) {
  std::string s;
  for (const auto& [b, v] : r.backends) {
    s += (s.empty() ? "" : "; ") + b + " " + verdict_name(v.verdict) +
         (v.detail.empty() ? "" : ": " + v.detail);
  }
  return s;
}

}  // namespace

StatusOr<CliOptions> parse_cli(const std::vector<std::string>& argv) {
  CliOptions o;
  o.data_dir = kDefaultDataDir;
  o.categories = all_categories();
  const std::vector<std::string> valued = {"data-dir", "categories", "filter", "backends",
                                           "json",     "expected",   "rtol",   "atol",
                                           "jobs",     "timeout"};
  const std::vector<std::string> bare = {"update-expected", "in-process", "verbose", "help"};
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-h") {
      o.help = true;
      continue;
    }
    if (!a.starts_with("--")) {
      return Error{"onnx_conformance: unexpected argument '" + a + "' (see --help)"};
    }
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    const bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const bool takes_value = std::find(valued.begin(), valued.end(), name) != valued.end();
    if (!takes_value && std::find(bare.begin(), bare.end(), name) == bare.end()) {
      std::string known;
      for (const auto& list : {valued, bare}) {
        for (const std::string& k : list) known += (known.empty() ? "--" : ", --") + k;
      }
      return Error{"onnx_conformance: unknown flag '" + a + "'; flags: " + known};
    }
    if (!takes_value && has_value) return Error{"onnx_conformance: --" + name + " takes no value"};
    if (takes_value && !has_value) {
      if (i + 1 >= argv.size()) return Error{"onnx_conformance: --" + name + " needs a value"};
      value = argv[++i];
    }
    if (name == "data-dir") o.data_dir = resolve_path(value);
    if (name == "categories") o.categories = split_list(value);
    if (name == "filter") o.filter = value;
    if (name == "backends") o.backends = split_list(value);
    if (name == "json") o.json_path = resolve_path(value);
    if (name == "expected") o.expected_path = resolve_path(value);
    if (name == "rtol" || name == "atol") {
      const FlagNumber<double> x = parse_real_number(value);
      if (!x.ok() || x.value < 0) {
        return Error{"onnx_conformance: --" + name + " expects a number >= 0, got '" + value + "'"};
      }
      (name == "rtol" ? o.tolerance.rtol : o.tolerance.atol) = x.value;
    }
    if (name == "jobs" || name == "timeout") {
      StatusOr<int> n = positive_int(name, value, name == "jobs" ? 64 : 86400);
      if (!n.ok()) return n.error();
      (name == "jobs" ? o.jobs : o.timeout_s) = *n;
    }
    if (name == "update-expected") o.update_expected = true;
    if (name == "in-process") o.in_process = true;
    if (name == "verbose") o.verbose = true;
    if (name == "help") o.help = true;
  }
  if (o.categories.empty()) return Error{"onnx_conformance: --categories names no category"};
  if (o.backends.empty()) return Error{"onnx_conformance: --backends names no backend"};
  if (o.update_expected && !o.filter.empty()) {
    return Error{"onnx_conformance: --update-expected records whole categories; leave out --filter"};
  }
  if (o.expected_path.empty()) o.expected_path = default_expected_path();
  return o;
}

int run_cli(const CliOptions& o, std::ostream& out, std::ostream& err) {
  auto fail = [&](const std::string& message) {
    err << message << "\n";
    return 1;
  };
  StatusOr<std::vector<Case>> cases = find_cases(o.data_dir, o.categories, o.filter);
  if (!cases.ok()) return fail("onnx_conformance: " + cases.error().message);
  if (!o.json_path.empty()) {
    if (std::optional<std::string> why = unwritable_file(o.json_path)) {
      return fail("onnx_conformance: cannot write --json=" + o.json_path + ": " + *why);
    }
  }
  size_t done = 0;
  RunnerOptions r{.jobs = o.jobs, .timeout_s = o.timeout_s, .isolate = !o.in_process,
                  .tolerance = o.tolerance};
  r.on_result = [&](const CaseResult& c) {
    ++done;
    if (o.verbose) {
      err << "[" << done << "/" << cases->size() << "] " << c.category << "/" << c.name << ": "
          << verdicts(c) << "\n";
    } else if (done % 100 == 0 || done == cases->size()) {
      err << done << " of " << cases->size() << " cases run\n";
    }
  };
  const std::vector<CaseResult> results = run_cases(*cases, {o.backends}, r);
  out << format_table(results, o.backends);

  if (!o.json_path.empty()) {
    if (Status s = write_file_atomically(o.json_path, results_json(results, o.backends)); !s.ok()) {
      return fail("onnx_conformance: " + s.error().message);
    }
    out << "\nwrote " << o.json_path << "\n";
  }
  if (o.update_expected) {
    Expected base;
    if (std::filesystem::exists(o.expected_path)) {
      StatusOr<Expected> e = read_expected(o.expected_path);
      if (!e.ok()) return fail("onnx_conformance: " + e.error().message);
      base = *e;
    }
    const Expected now = merge_expected(base, expected_from(results, o.backends));
    if (Status s = write_file_atomically(o.expected_path, expected_json(now)); !s.ok()) {
      return fail("onnx_conformance: " + s.error().message);
    }
    out << "\nwrote " << o.expected_path << "\n";
    return 0;
  }
  if (!std::filesystem::exists(o.expected_path)) {
    out << "\nno expected results at " << o.expected_path << " (--update-expected writes them)\n";
    return 0;
  }
  StatusOr<Expected> expected = read_expected(o.expected_path);
  if (!expected.ok()) return fail("onnx_conformance: " + expected.error().message);
  const Drift d = compare_with_expected(*expected, results);
  out << "\nagainst " << o.expected_path << ": " << d.regressions.size() << " regressions, "
      << d.new_passes.size() << " new passes\n";
  for (const std::string& s : d.regressions) out << "  REGRESSION " << s << "\n";
  for (const std::string& s : d.new_passes) out << "  new pass " << s << "\n";
  if (!d.new_passes.empty()) {
    out << "record them: bazel run //tools/onnx_conformance -- --update-expected\n";
  }
  return d.regressions.empty() ? 0 : 1;
}

}  // namespace weft::onnx_conformance
