#include "training/monitor/metrics.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "formats/file_io.h"

namespace weft::monitor {
namespace {

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

/// The least-squares slope of `ys` against 0, 1, 2, ...; 0 with fewer than two values.
double least_squares_slope(const std::vector<double>& ys) {
  const double n = static_cast<double>(ys.size());
  if (ys.size() < 2) return 0;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    const double x = static_cast<double>(i);
    sx += x;
    sy += ys[i];
    sxx += x * x;
    sxy += x * ys[i];
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

Status check_n(int64_t n) {
  if (n < 1) return Error{"a trend needs n >= 1 epochs, got " + std::to_string(n)};
  return Status();
}

}  // namespace

void Metrics::record(const std::string& name, double value) {
  auto [it, fresh] = series_.try_emplace(name);
  if (fresh) order_.push_back(name);
  it->second.batch_sum += value;
  ++it->second.batch_count;
}

Status Metrics::flush() {
  ++epochs_;
  for (auto& [name, s] : series_) {
    if (s.batch_count == 0) continue;
    s.epochs.emplace_back(epochs_, s.batch_sum / static_cast<double>(s.batch_count));
    s.batch_sum = 0;
    s.batch_count = 0;
  }
  if (csv_path_.empty()) return Status();
  return write_file_atomically(csv_path_, csv());
}

void Metrics::skip_epochs(int64_t n) {
  WEFT_CHECK(epochs_ == skipped_ && n >= 0, "skip_epochs after a flush, or of " + std::to_string(n) + " epochs");
  epochs_ = skipped_ = n;
}

Goal Metrics::goal(const std::string& name) const {
  auto it = goals_.find(name);
  return it == goals_.end() ? Goal::minimize : it->second;
}

std::string Metrics::known() const {
  std::string names;
  for (const std::string& n : order_) names += (names.empty() ? "" : ", ") + n;
  return names.empty() ? " (none has been yet)" : " (metrics: " + names + ")";
}

StatusOr<const Metrics::Series*> Metrics::find(const std::string& name) const {
  auto it = series_.find(name);
  if (it != series_.end()) return &it->second;
  return Error{"no metric '" + name + "' was recorded" + known()};
}

StatusOr<std::vector<std::pair<int64_t, double>>> Metrics::history(const std::string& name) const {
  WEFT_ASSIGN_OR_RETURN(const Series* s, find(name));
  return s->epochs;
}

StatusOr<double> Metrics::current(const std::string& name) const {
  WEFT_ASSIGN_OR_RETURN(const Series* s, find(name));
  if (s->batch_count == 0) {
    return Error{"metric '" + name + "' has no value in the current epoch (since the last flush)"};
  }
  return s->batch_sum / static_cast<double>(s->batch_count);
}

StatusOr<std::vector<double>> Metrics::last(const std::string& name, int64_t n) const {
  WEFT_RETURN_IF_ERROR(check_n(n));
  WEFT_ASSIGN_OR_RETURN(const Series* s, find(name));
  const size_t take = std::min(s->epochs.size(), static_cast<size_t>(n));
  std::vector<double> out;
  for (size_t i = s->epochs.size() - take; i < s->epochs.size(); ++i) out.push_back(s->epochs[i].second);
  return out;
}

StatusOr<double> Metrics::slope(const std::string& name, int64_t n) const {
  WEFT_ASSIGN_OR_RETURN(std::vector<double> ys, last(name, n));
  return least_squares_slope(ys);
}

StatusOr<bool> Metrics::improving(const std::string& name, int64_t n) const {
  WEFT_ASSIGN_OR_RETURN(std::vector<double> ys, last(name, n));
  if (static_cast<int64_t>(ys.size()) < n || ys.size() < 2) return false;
  const double s = least_squares_slope(ys);
  return goal(name) == Goal::minimize ? s < 0 : s > 0;
}

StatusOr<bool> Metrics::stalled(const std::string& name, int64_t n, double tol) const {
  WEFT_RETURN_IF_ERROR(check_n(n));
  WEFT_ASSIGN_OR_RETURN(const Series* s, find(name));
  const std::vector<std::pair<int64_t, double>>& e = s->epochs;
  if (static_cast<int64_t>(e.size()) <= n) return false;
  const bool up = goal(name) == Goal::maximize;
  auto better = [&](double a, double b) { return up ? std::max(a, b) : std::min(a, b); };
  const size_t split = e.size() - static_cast<size_t>(n);
  double before = e[0].second, recent = e[split].second;
  for (size_t i = 1; i < split; ++i) before = better(before, e[i].second);
  for (size_t i = split + 1; i < e.size(); ++i) recent = better(recent, e[i].second);
  const double improvement = up ? recent - before : before - recent;
  return improvement <= tol;
}

StatusOr<bool> Metrics::converged(const std::string& name, int64_t n, double tol) const {
  WEFT_ASSIGN_OR_RETURN(std::vector<double> ys, last(name, n));
  if (static_cast<int64_t>(ys.size()) < n) return false;
  auto [lo, hi] = std::minmax_element(ys.begin(), ys.end());
  return *hi - *lo <= tol;
}

StatusOr<std::vector<std::string>> Metrics::names_under(const std::string& prefix) const {
  std::vector<std::string> out;
  for (const std::string& name : order_) {
    if (name == prefix || name.rfind(prefix + ".", 0) == 0) out.push_back(name);
  }
  if (out.empty()) return Error{"no metric under '" + prefix + "' was recorded" + known()};
  return out;
}

StatusOr<bool> Metrics::any_improving(const std::string& prefix, int64_t n) const {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> names, names_under(prefix));
  for (const std::string& name : names) {
    WEFT_ASSIGN_OR_RETURN(bool yes, improving(name, n));
    if (yes) return true;
  }
  return false;
}

StatusOr<bool> Metrics::all_stalled(const std::string& prefix, int64_t n, double tol) const {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> names, names_under(prefix));
  for (const std::string& name : names) {
    WEFT_ASSIGN_OR_RETURN(bool yes, stalled(name, n, tol));
    if (!yes) return false;
  }
  return true;
}

StatusOr<bool> Metrics::all_converged(const std::string& prefix, int64_t n, double tol) const {
  WEFT_ASSIGN_OR_RETURN(std::vector<std::string> names, names_under(prefix));
  for (const std::string& name : names) {
    WEFT_ASSIGN_OR_RETURN(bool yes, converged(name, n, tol));
    if (!yes) return false;
  }
  return true;
}

Status Metrics::open_csv(const std::string& path, const std::string& what) {
  // Written once now (the header), so a path that cannot be written fails here.
  Status s = write_file_atomically(path, csv());
  if (!s.ok()) return Error{(what.empty() ? path : what) + ": cannot write it (" + s.error().message + ")"};
  csv_path_ = path;
  return Status();
}

std::string Metrics::csv() const {
  std::ostringstream o;
  o << "epoch";
  for (const std::string& name : order_) o << "," << name;
  o << "\n";
  for (int64_t epoch = skipped_ + 1; epoch <= epochs_; ++epoch) {
    o << epoch;
    for (const std::string& name : order_) {
      o << ",";
      for (const auto& [e, v] : series_.at(name).epochs) {
        if (e == epoch) o << format_value(v);
      }
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace weft::monitor
