#include "tools/onnx_conformance/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "formats/file_io.h"

namespace weft::onnx_conformance {
namespace {

using nlohmann::json;

std::string short_number(double v) {
  if (std::isinf(v)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

StatusOr<Verdict> verdict_from(const std::string& s) {
  for (Verdict v : {Verdict::passed, Verdict::failed, Verdict::refused}) {
    if (s == verdict_name(v)) return v;
  }
  return Error{"unknown verdict '" + s + "'"};
}

json backend_json(const BackendResult& b) {
  json j = {{"verdict", verdict_name(b.verdict)}};
  if (!b.detail.empty()) j["detail"] = b.detail;
  // JSON has no infinity: an unmeasured error is left out.
  if (b.verdict == Verdict::failed && std::isfinite(b.max_error)) j["max_error"] = b.max_error;
  return j;
}

json case_json(const CaseResult& r) {
  json backends = json::object();
  for (const auto& [name, b] : r.backends) backends[name] = backend_json(b);
  json j = {{"category", r.category}, {"name", r.name}, {"op_types", r.op_types}, {"backends", backends}};
  if (!r.fixed_inputs.empty()) j["fixed_inputs"] = r.fixed_inputs;
  return j;
}

// Counts of one row of the table, for one backend.
struct Counts {
  int passed = 0, failed = 0, refused = 0;
  const CaseResult* worst = nullptr;  // the failure with the largest error
  std::map<std::string, int> reasons;

  void add(const CaseResult& r, const BackendResult& b) {
    switch (b.verdict) {
      case Verdict::passed: ++passed; break;
      case Verdict::failed:
        ++failed;
        if (worst == nullptr || b.max_error > worst_error) {
          worst = &r;
          worst_error = b.max_error;
        }
        break;
      case Verdict::refused: ++reasons[reason_group(b.detail)], ++refused; break;
    }
  }
  std::string top_reason() const {
    auto it = std::max_element(reasons.begin(), reasons.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
    return it == reasons.end() ? "" : it->first;
  }
  double worst_error = 0;
};

// One row: its label and, per backend, its counts.
struct Row {
  std::string label;
  std::map<std::string, Counts> by_backend;
  void add(const CaseResult& r) {
    for (const auto& [name, b] : r.backends) by_backend[name].add(r, b);
  }
};

std::string pad(std::string s, size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

constexpr size_t kLabel = 36;
constexpr size_t kCount = 8;

std::string format_row(const Row& row, const std::vector<std::string>& backends) {
  std::string line = pad(row.label, kLabel, false);
  std::string note;
  std::string first_reason;
  for (const std::string& b : backends) {
    auto it = row.by_backend.find(b);
    const Counts c = it == row.by_backend.end() ? Counts{} : it->second;
    line += pad(std::to_string(c.passed), kCount, true) + pad(std::to_string(c.failed), kCount, true) +
            pad(std::to_string(c.refused), kCount, true) + "  ";
    if (c.worst != nullptr) {
      note += (note.empty() ? "" : "; ") + b + " worst " + c.worst->name + " (|error| " +
              short_number(c.worst_error) + ")";
    }
    if (first_reason.empty()) first_reason = c.top_reason();
  }
  if (note.empty() && !first_reason.empty()) note = "refused: " + first_reason;
  if (note.size() > 100) note = note.substr(0, 97) + "...";
  line += note;
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

// The rows of the table: per category (in the order of the results), per op type, total.
struct Summary {
  std::vector<Row> categories;
  std::map<std::string, Row> op_types;
  Row total{"total", {}};

  explicit Summary(const std::vector<CaseResult>& results) {
    for (const CaseResult& r : results) {
      auto it = std::find_if(categories.begin(), categories.end(),
                             [&](const Row& row) { return row.label == "category " + r.category; });
      if (it == categories.end()) it = categories.insert(categories.end(), Row{"category " + r.category, {}});
      it->add(r);
      std::vector<std::string> ops = r.op_types;
      if (ops.empty()) ops.push_back("(model unreadable)");
      for (const std::string& op : ops) {
        Row& row = op_types[op];
        row.label = "  " + op;
        row.add(r);
      }
      total.add(r);
    }
  }
};

// A row's counts per backend as JSON (with the row's refusal reasons when `reasons`).
json row_json(const Row& row, bool reasons) {
  json out = json::object();
  for (const auto& [backend, c] : row.by_backend) {
    json j = {{"passed", c.passed}, {"failed", c.failed}, {"refused", c.refused}};
    if (reasons) j["refusal_reasons"] = c.reasons;
    out[backend] = j;
  }
  return out;
}

}  // namespace

std::string case_result_to_json(const CaseResult& r) { return case_json(r).dump(); }

StatusOr<CaseResult> case_result_from_json(std::string_view text) {
  try {
    const json j = json::parse(text);
    CaseResult r{j.at("category").get<std::string>(), j.at("name").get<std::string>(),
                 j.at("op_types").get<std::vector<std::string>>(), {}, j.value("fixed_inputs", "")};
    for (const auto& [name, b] : j.at("backends").items()) {
      WEFT_ASSIGN_OR_RETURN(Verdict v, verdict_from(b.at("verdict").get<std::string>()));
      const double error = b.contains("max_error") ? b.at("max_error").get<double>()
                           : v == Verdict::failed  ? std::numeric_limits<double>::infinity()
                                                   : 0;
      r.backends[name] = {v, b.value("detail", ""), error};
    }
    return r;
  } catch (const json::exception& e) {
    return Error{std::string("a case result that is not valid JSON: ") + e.what()};
  }
}

std::string format_table(const std::vector<CaseResult>& results,
                         const std::vector<std::string>& backends) {
  const Summary summary(results);
  const std::vector<Row>& categories = summary.categories;
  const std::map<std::string, Row>& op_types = summary.op_types;
  const Row& total = summary.total;

  std::string out;
  std::string head1 = pad("", kLabel, false), head2 = pad("", kLabel, false);
  const size_t width = 3 * kCount + 2;
  for (const std::string& b : backends) {
    head1 += pad(b, width - 2, true) + "  ";
    head2 += pad("passed", kCount, true) + pad("failed", kCount, true) + pad("refused", kCount, true) + "  ";
  }
  while (head1.back() == ' ') head1.pop_back();
  out += head1 + "\n" + head2 + "note\n";
  for (const Row& row : categories) out += format_row(row, backends);
  out += "op types (a case counts under each op type of its model):\n";
  for (const auto& [name, row] : op_types) out += format_row(row, backends);
  out += format_row(total, backends);

  for (const std::string& b : backends) {
    std::vector<const CaseResult*> failed;
    for (const CaseResult& r : results) {
      auto it = r.backends.find(b);
      if (it != r.backends.end() && it->second.verdict == Verdict::failed) failed.push_back(&r);
    }
    if (!failed.empty()) {
      out += "\nfailures on " + b + ":\n";
      for (const CaseResult* r : failed) {
        out += "  " + r->category + "/" + r->name + ": " + r->backends.at(b).detail + "\n";
      }
    }
    const auto it = total.by_backend.find(b);
    if (it == total.by_backend.end() || it->second.reasons.empty()) continue;
    std::vector<std::pair<int, std::string>> reasons;
    for (const auto& [reason, n] : it->second.reasons) reasons.emplace_back(-n, reason);
    std::sort(reasons.begin(), reasons.end());
    out += "\nrefusals on " + b + ", by reason:\n";
    for (const auto& [n, reason] : reasons) out += pad(std::to_string(-n), 6, true) + "  " + reason + "\n";
  }
  return out;
}

std::string results_json(const std::vector<CaseResult>& results,
                         const std::vector<std::string>& backends) {
  const Summary summary(results);
  json categories = json::object(), op_types = json::object(), cases = json::array();
  for (const Row& row : summary.categories) categories[row.label.substr(9)] = row_json(row, false);
  for (const auto& [op, row] : summary.op_types) op_types[op] = row_json(row, false);
  for (const CaseResult& r : results) cases.push_back(case_json(r));
  return json{{"backends", backends},
              {"total", row_json(summary.total, /*reasons=*/true)},
              {"categories", categories},
              {"op_types", op_types},
              {"cases", cases}}
             .dump(1) + "\n";
}

Expected expected_from(const std::vector<CaseResult>& results,
                       const std::vector<std::string>& backends) {
  Expected e;
  for (const std::string& b : backends) {
    for (const CaseResult& r : results) {
      std::set<std::string>& names = e.passing[b][r.category];
      auto it = r.backends.find(b);
      if (it != r.backends.end() && it->second.verdict == Verdict::passed) names.insert(r.name);
    }
  }
  return e;
}

Expected merge_expected(Expected base, const Expected& update) {
  for (const auto& [backend, categories] : update.passing) {
    for (const auto& [category, names] : categories) base.passing[backend][category] = names;
  }
  return base;
}

StatusOr<Expected> read_expected(const std::string& path) {
  StatusOr<std::string> text = read_file(path);
  if (!text.ok()) return Error{"cannot read the expected results " + path + ": " + text.error().message};
  try {
    const json j = json::parse(*text);
    Expected e;
    for (const auto& [backend, categories] : j.at("passing").items()) {
      for (const auto& [category, c] : categories.items()) {
        const auto names = c.at("cases").get<std::vector<std::string>>();
        e.passing[backend][category] = {names.begin(), names.end()};
      }
    }
    return e;
  } catch (const json::exception& ex) {
    return Error{path + ": not an expected-results file: " + ex.what()};
  }
}

std::string expected_json(const Expected& e) {
  // Written by hand so that each case name has its own line (reviewable diffs).
  std::string out =
      "{\n  \"comment\": \"Cases of ONNX's backend test data that pass, per backend and category; "
      "written by `bazel run //tools/onnx_conformance -- --update-expected`, checked by "
      "//tools/onnx_conformance:conformance_test.\",\n  \"passing\": {";
  bool first_backend = true;
  for (const auto& [backend, categories] : e.passing) {
    out += std::string(first_backend ? "" : ",") + "\n    " + json(backend).dump() + ": {";
    first_backend = false;
    bool first_category = true;
    for (const auto& [category, names] : categories) {
      out += std::string(first_category ? "" : ",") + "\n      " + json(category).dump() +
             ": {\"passed\": " + std::to_string(names.size()) + ", \"cases\": [";
      first_category = false;
      bool first_name = true;
      for (const std::string& n : names) {
        out += std::string(first_name ? "" : ",") + "\n        " + json(n).dump();
        first_name = false;
      }
      out += names.empty() ? "]}" : "\n      ]}";
    }
    out += "\n    }";
  }
  return out + "\n  }\n}\n";
}

Drift compare_with_expected(const Expected& expected, const std::vector<CaseResult>& results) {
  Drift d;
  for (const CaseResult& r : results) {
    for (const auto& [backend, b] : r.backends) {
      bool listed = false;
      if (auto bi = expected.passing.find(backend); bi != expected.passing.end()) {
        if (auto ci = bi->second.find(r.category); ci != bi->second.end()) listed = ci->second.count(r.name) > 0;
      }
      const std::string who = backend + " " + r.category + "/" + r.name;
      if (listed && b.verdict != Verdict::passed) {
        d.regressions.push_back(who + ": " + verdict_name(b.verdict) + ": " + b.detail);
      } else if (!listed && b.verdict == Verdict::passed) {
        d.new_passes.push_back(who);
      }
    }
  }
  return d;
}

}  // namespace weft::onnx_conformance
