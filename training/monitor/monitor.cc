#include "training/monitor/monitor.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ir/text_util.h"
#include "formats/file_io.h"

namespace weft::monitor {
namespace {

double now_s() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

int64_t status_field(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string name;
  while (in >> name) {
    if (name == key) {
      int64_t kib = 0;
      in >> kib;
      return kib * 1024;
    }
    std::getline(in, name);
  }
  return 0;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

// 1, 2 or 5 times a power of ten, near (hi - lo) / 5.
double tick_step(double lo, double hi) {
  const double span = hi > lo ? hi - lo : 1;
  const double raw = span / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

std::string tick_label(double v, double step) {
  if (step >= 1 && std::fabs(v) < 1e7) return fmt("%.0f", v);
  return fmt("%.3g", v);
}

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // (x, y)
  bool dashed = false;
};

// A line chart as inline SVG: axes with ticks, one polyline (and dots when sparse) per
// series, a legend. `bars` draws the first series as bars instead.
std::string chart(const std::string& title, const std::string& x_label, const std::vector<Series>& series,
                  bool bars = false) {
  const double W = 560, H = 260, L = 64, R = 16, T = 30, B = 42;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  std::ostringstream o;
  o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\">";
  o << "<text x=\"" << W / 2 << "\" y=\"18\" text-anchor=\"middle\" class=\"title\">" << html_escape(title) << "</text>";
  if (!std::isfinite(x0)) {
    o << "<text x=\"" << W / 2 << "\" y=\"" << H / 2 << "\" text-anchor=\"middle\">no data</text></svg>";
    return o.str();
  }
  if (bars) x0 -= 0.5, x1 += 0.5, y0 = std::min(0.0, y0);
  if (x1 == x0) x0 -= 1, x1 += 1;
  if (y1 == y0) y0 -= std::fabs(y0) * 0.1 + 1e-9, y1 += std::fabs(y1) * 0.1 + 1e-9;
  const double ys = tick_step(y0, y1), xs = tick_step(x0, x1);
  y0 = std::floor(y0 / ys) * ys, y1 = std::ceil(y1 / ys) * ys;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\" class=\"plot\"/>";
  for (double y = y0; y <= y1 + ys / 2; y += ys) {
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << py(y) << "\" y2=\"" << py(y)
      << "\" class=\"grid\"/><text x=\"" << L - 6 << "\" y=\"" << py(y) + 4 << "\" text-anchor=\"end\">"
      << tick_label(y, ys) << "</text>";
  }
  for (double x = std::ceil(x0 / xs) * xs; x <= x1; x += xs) {
    o << "<text x=\"" << px(x) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << tick_label(x, xs)
      << "</text>";
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\">" << html_escape(x_label)
    << "</text>";
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    if (bars && k == 0) {
      const double w = std::max(2.0, (W - L - R) / (x1 - x0) * 0.7);
      for (auto [x, y] : s.points) {
        o << "<rect class=\"bar\" x=\"" << px(x) - w / 2 << "\" y=\"" << py(y) << "\" width=\"" << w
          << "\" height=\"" << py(y0) - py(y) << "\" fill=\"" << s.color << "\"><title>" << fmt("%g", x) << ": "
          << fmt("%.4g", y) << "</title></rect>";
      }
    } else {
      o << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"1.6\""
        << (s.dashed ? " stroke-dasharray=\"5 3\"" : "") << " points=\"";
      for (auto [x, y] : s.points) {
        if (std::isfinite(y)) o << fmt("%.1f", px(x)) << "," << fmt("%.1f", py(y)) << " ";
      }
      o << "\"/>";
      if (s.points.size() <= 60) {
        for (auto [x, y] : s.points) {
          if (!std::isfinite(y)) continue;
          o << "<circle cx=\"" << fmt("%.1f", px(x)) << "\" cy=\"" << fmt("%.1f", py(y)) << "\" r=\"2.5\" fill=\""
            << s.color << "\"><title>" << html_escape(s.name) << " at " << fmt("%g", x) << ": " << fmt("%.5g", y)
            << "</title></circle>";
        }
      }
    }
    o << "<rect x=\"" << L + 8 << "\" y=\"" << T + 6 + 16 * k << "\" width=\"10\" height=\"10\" fill=\"" << s.color
      << "\"/><text x=\"" << L + 22 << "\" y=\"" << T + 15 + 16 * k << "\">" << html_escape(s.name) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

}  // namespace

int64_t resident_bytes() { return status_field("VmRSS:"); }
int64_t peak_resident_bytes() { return status_field("VmHWM:"); }

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[48];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

Progress::Progress(std::FILE* out, int64_t every, bool under_launcher)
    : out_(out), every_(std::max<int64_t>(every, 1)), terminal_(isatty(fileno(out)) && !under_launcher),
      start_(now_s()) {}

void Progress::update(int64_t step, int64_t total, int64_t epoch, int64_t epochs, double loss, double lr,
                      double steps_per_s) {
  const bool last = step == total;
  if (terminal_) {
    const double now = now_s() - start_;
    if (!last && now - shown_at_ < 0.1) return;
    shown_at_ = now;
  } else if (step % every_ != 0) {
    return;
  }
  char line[256];
  std::snprintf(line, sizeof(line), "step %lld/%lld  epoch %lld/%lld  loss %.4f  lr %.4g  %.1f steps/s  ETA %s",
                static_cast<long long>(step), static_cast<long long>(total), static_cast<long long>(epoch + 1),
                static_cast<long long>(epochs), loss, lr, steps_per_s,
                format_duration((total - step) / steps_per_s).c_str());
  if (terminal_) {
    std::fprintf(out_, "\r%s%s\033[K", line, suffix_.c_str());
    open_ = true;
  } else {
    std::fprintf(out_, "%s%s\n", line, suffix_.c_str());
  }
  std::fflush(out_);
}

void Progress::line(const std::string& text) {
  if (open_) std::fprintf(out_, "\r\033[K");
  open_ = false;
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

RunLog::RunLog(std::vector<std::string> metrics) : metric_names_(std::move(metrics)) {}

void RunLog::add_metrics(const std::vector<std::string>& names) {
  WEFT_CHECK(csv_ == nullptr && rows_.empty(), "RunLog::add_metrics after the log started");
  metric_names_.insert(metric_names_.end(), names.begin(), names.end());
}

RunLog::~RunLog() {
  if (csv_) std::fclose(csv_);
}

Status RunLog::open_csv(const std::string& path, const std::string& what) {
  if (csv_) std::fclose(csv_);
  csv_ = std::fopen(path.c_str(), "w");
  if (!csv_) {
    return Error{(what.empty() ? path : what) + ": cannot write it (" + std::strerror(errno) + ")"};
  }
  std::fprintf(csv_, "epoch,step,loss,lr,examples_per_s,elapsed_s,rss_mib");
  for (const std::string& m : metric_names_) std::fprintf(csv_, ",%s", m.c_str());
  std::fprintf(csv_, "\n");
  std::fflush(csv_);
  return Status();
}

namespace {

/// CPU time (user + system) of this process, in seconds.
double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/// A JSON number (null for NaN and infinities, which JSON lacks).
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

Status RunLog::serve(int port, const ServeOptions& options) {
  WEFT_RETURN_IF_ERROR(dashboard_.start(port, options));
  for (size_t i = 0; i < rows_.size(); ++i) dashboard_.publish(step_event(i));
  return Status();
}

std::string RunLog::step_event(size_t i) const {
  const Row& r = rows_.at(i);
  std::string e = "{\"step\":" + std::to_string(r.step.step) + ",\"epoch\":" + std::to_string(r.step.epoch) +
                  ",\"loss\":" + json_number(r.step.loss) + ",\"lr\":" + json_number(r.step.lr) +
                  ",\"examples_per_s\":" + json_number(r.step.examples_per_s) +
                  ",\"elapsed_s\":" + json_number(r.step.elapsed_s) + ",\"rss_mib\":" + json_number(r.rss_mib) +
                  ",\"cpu_percent\":" + json_number(r.cpu_percent);
  if (r.gpu_mib) e += ",\"gpu_mib\":" + json_number(*r.gpu_mib);
  e += ",\"metrics\":{";
  bool first = true;
  for (size_t m = 0; m < r.metrics.size(); ++m) {
    if (!r.metrics[m]) continue;
    e += (first ? "" : ",") + json_string(metric_names_[m]) + ":" + json_number(*r.metrics[m]);
    first = false;
  }
  return e + "}}";
}

std::string RunLog::epoch_event(int64_t epoch, double seconds) const {
  std::string e = "{\"type\":\"epoch\",\"epoch\":" + std::to_string(epoch) + ",\"seconds\":" +
                  json_number(seconds) + ",\"metrics\":{";
  bool first = true;
  if (metrics_ != nullptr) {
    for (const std::string& name : metrics_->names()) {
      const auto h = *metrics_->history(name);
      if (h.empty() || h.back().first != metrics_->epochs()) continue;  // not measured this epoch
      e += (first ? "" : ",") + json_string(name) + ":" + json_number(h.back().second);
      first = false;
    }
  }
  return e + "}}";
}

void RunLog::record(const StepRecord& step, const std::map<std::string, double>& metrics) {
  Row row{step, static_cast<double>(resident_bytes()) / (1 << 20), 0, std::nullopt, {}};
  // CPU time over wall time, measured over at least half a second (the clocks tick too
  // coarsely for one short step); rows in between repeat the last figure.
  const double cpu = process_cpu_s(), wall = now_s();
  if (last_wall_s_ < 0) {
    last_cpu_s_ = cpu;
    last_wall_s_ = wall;
  } else if (wall - last_wall_s_ >= 0.5) {
    cpu_percent_ = 100 * (cpu - last_cpu_s_) / (wall - last_wall_s_);
    last_cpu_s_ = cpu;
    last_wall_s_ = wall;
  }
  row.cpu_percent = cpu_percent_;
  if (gpu_memory_mib_) row.gpu_mib = gpu_memory_mib_();
  row.metrics.resize(metric_names_.size());
  for (const auto& [name, value] : metrics) {
    auto it = std::find(metric_names_.begin(), metric_names_.end(), name);
    WEFT_CHECK(it != metric_names_.end(), "RunLog::record: unknown metric '" + name + "'");
    row.metrics[it - metric_names_.begin()] = value;
  }
  if (csv_) {
    std::fprintf(csv_, "%lld,%lld,%.9g,%.9g,%.1f,%.3f,%.1f", static_cast<long long>(step.epoch),
                 static_cast<long long>(step.step), step.loss, step.lr, step.examples_per_s, step.elapsed_s,
                 row.rss_mib);
    for (const std::optional<double>& m : row.metrics) {
      if (m) {
        std::fprintf(csv_, ",%.9g", *m);
      } else {
        std::fprintf(csv_, ",");
      }
    }
    std::fprintf(csv_, "\n");
    std::fflush(csv_);
  }
  rows_.push_back(std::move(row));
  if (dashboard_.running()) dashboard_.publish(step_event(rows_.size() - 1));
}

void RunLog::end_epoch(int64_t epoch, double seconds) {
  epochs_.emplace_back(epoch, seconds);
  if (dashboard_.running()) dashboard_.publish(epoch_event(epoch, seconds));
}

std::string RunLog::report_html(const std::string& title) const {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << html_escape(title) << "</title><style>\n"
    << "body{font-family:sans-serif;margin:24px;color:#222}h1{font-size:20px}"
    << "table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}"
    << "th{background:#f4f4f4}.charts{display:flex;flex-wrap:wrap;gap:16px}"
    << "svg.chart{background:#fff;border:1px solid #ddd}svg text{font-size:11px;fill:#333}"
    << "svg text.title{font-size:13px;font-weight:bold}.plot{fill:#fbfbfb;stroke:#999}.grid{stroke:#e4e4e4}\n"
    << "</style></head><body>\n<h1>" << html_escape(title) << "</h1>\n";
  // Summary.
  o << "<table class=\"summary\"><tr><th>steps</th><th>epochs</th><th>time</th><th>last loss</th>";
  for (const std::string& m : metric_names_) o << "<th>last " << html_escape(m) << "</th>";
  o << "<th>examples/s (median)</th><th>peak memory</th></tr><tr>";
  std::vector<double> rates;
  for (const Row& r : rows_) rates.push_back(r.step.examples_per_s);
  std::sort(rates.begin(), rates.end());
  const Row* last = rows_.empty() ? nullptr : &rows_.back();
  o << "<td>" << (last ? last->step.step : 0) << "</td><td>" << epochs_.size() << "</td><td>"
    << (last ? format_duration(last->step.elapsed_s) : "-") << "</td><td>"
    << (last ? fmt("%.4f", last->step.loss) : "-") << "</td>";
  for (size_t m = 0; m < metric_names_.size(); ++m) {
    std::optional<double> v;
    for (const Row& r : rows_) {
      if (r.metrics[m]) v = r.metrics[m];
    }
    o << "<td>" << (v ? fmt("%.4f", *v) : "-") << "</td>";
  }
  o << "<td>" << (rates.empty() ? "-" : fmt("%.1f", rates[rates.size() / 2])) << "</td><td>"
    << fmt("%.1f MiB", static_cast<double>(peak_resident_bytes()) / (1 << 20)) << "</td></tr></table>\n";

  o << "<div class=\"charts\">\n";
  Series loss{"loss", kPalette[0], {}}, smooth{"loss (moving average)", kPalette[1], {}}, lr{"lr", kPalette[2], {}};
  const size_t window = std::max<size_t>(1, rows_.size() / 50);
  double sum = 0;
  for (size_t i = 0; i < rows_.size(); ++i) {
    const double x = static_cast<double>(rows_[i].step.step);
    loss.points.emplace_back(x, rows_[i].step.loss);
    sum += rows_[i].step.loss;
    if (i >= window) sum -= rows_[i - window].step.loss;
    smooth.points.emplace_back(x, sum / static_cast<double>(std::min(i + 1, window)));
    lr.points.emplace_back(x, rows_[i].step.lr);
  }
  o << chart("training loss", "step", {loss, smooth}) << "\n";
  for (size_t m = 0; m < metric_names_.size(); ++m) {
    Series s{metric_names_[m], kPalette[(m + 3) % 6], {}};
    for (const Row& r : rows_) {
      if (r.metrics[m]) s.points.emplace_back(static_cast<double>(r.step.step), *r.metrics[m]);
    }
    o << chart(metric_names_[m], "step", {s}) << "\n";
  }
  if (metrics_ != nullptr) {
    for (size_t m = 0; m < metrics_->names().size(); ++m) {
      const std::string& name = metrics_->names()[m];
      Series s{name, kPalette[(m + 1) % 6], {}};
      const StatusOr<std::vector<std::pair<int64_t, double>>> history = metrics_->history(name);
      if (!history.ok()) continue;  // a name from names() always has one
      for (auto [epoch, v] : *history) s.points.emplace_back(static_cast<double>(epoch), v);
      o << chart(name + " (per epoch)", "epoch", {s}) << "\n";
    }
  }
  Series epoch_time{"seconds", kPalette[4], {}};
  for (auto [e, seconds] : epochs_) epoch_time.points.emplace_back(static_cast<double>(e), seconds);
  o << chart("time per epoch (s)", "epoch", {epoch_time}, /*bars=*/true) << "\n";
  Series rss{"resident memory (MiB)", kPalette[3], {}};
  for (const Row& r : rows_) rss.points.emplace_back(static_cast<double>(r.step.step), r.rss_mib);
  o << chart("memory", "step", {rss}) << "\n";
  o << chart("learning rate", "step", {lr}) << "\n";
  o << "</div>\n</body></html>\n";
  return o.str();
}

Status RunLog::write_report(const std::string& path, const std::string& title) const {
  return write_file_atomically(path, report_html(title));
}

}  // namespace weft::monitor
