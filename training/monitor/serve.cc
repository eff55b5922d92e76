#include "training/monitor/serve.h"

#include <httplib.h>

#include <sys/socket.h>

#include <chrono>

namespace weft::monitor {
namespace {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// The page's script: an EventSource on /events, a series per name, an SVG line chart per
// series (redrawn at most four times a second), `#points` the count of events drawn.
constexpr const char* kScript = R"JS(
const series = new Map();
let points = 0, dirty = new Set();
function add(name, x, y) {
  if (typeof y !== 'number' || !isFinite(y)) return;
  let s = series.get(name);
  if (!s) {
    const box = document.createElement('div');
    box.className = 'chart';
    box.innerHTML = '<div class="title"></div><svg viewBox="0 0 360 180" width="360" height="180"></svg>';
    box.firstChild.textContent = name;
    document.getElementById('charts').appendChild(box);
    s = {xs: [], ys: [], svg: box.lastChild};
    series.set(name, s);
  }
  s.xs.push(x); s.ys.push(y);
  dirty.add(name);
}
function fmt(v) { return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(2) : +v.toPrecision(4); }
function draw(s) {
  const n = s.xs.length, x0 = s.xs[0], x1 = s.xs[n - 1];
  let lo = Math.min(...s.ys), hi = Math.max(...s.ys);
  if (hi === lo) { const pad = Math.abs(hi) * 0.1 || 1; hi += pad; lo -= pad; }
  const X = x => 50 + (x1 === x0 ? 150 : (x - x0) / (x1 - x0) * 300);
  const Y = y => 160 - (y - lo) / (hi - lo) * 150;
  let d = '';
  for (let i = 0; i < n; ++i) d += (i ? ' ' : '') + X(s.xs[i]).toFixed(1) + ',' + Y(s.ys[i]).toFixed(1);
  s.svg.innerHTML = '<rect class="plot" x="50" y="10" width="300" height="150"/>' +
      '<text x="46" y="16" text-anchor="end">' + fmt(hi) + '</text>' +
      '<text x="46" y="162" text-anchor="end">' + fmt(lo) + '</text>' +
      '<text x="350" y="175" text-anchor="end">' + fmt(x1) + '</text>' +
      '<polyline class="line" points="' + d + '"/>';
}
setInterval(() => { for (const name of dirty) draw(series.get(name)); dirty.clear(); }, 250);
function on_event(p) {
  ++points;
  if (p.type === 'epoch') {
    for (const [k, v] of Object.entries(p.metrics || {})) add(k + ' (per epoch)', p.epoch, v);
    if (p.seconds !== undefined) add('time per epoch (s)', p.epoch, p.seconds);
  } else {
    add('loss', p.step, p.loss);
    add('learning rate', p.step, p.lr);
    add('examples/s', p.step, p.examples_per_s);
    add('CPU (%)', p.step, p.cpu_percent);
    add('resident memory (MiB)', p.step, p.rss_mib);
    add('GPU memory (MiB)', p.step, p.gpu_mib);
    for (const [k, v] of Object.entries(p.metrics || {})) add(k, p.step, v);
    document.getElementById('last').textContent =
        'step ' + p.step + (p.epoch !== undefined ? ', epoch ' + p.epoch : '') + ', loss ' + fmt(p.loss);
  }
  document.getElementById('points').textContent = points;
}
const source = new EventSource('/events');
source.onmessage = e => on_event(JSON.parse(e.data));
source.onerror = () => {
  // CLOSED: the stream was refused (503: the dashboard's limit of streams), not retried.
  document.getElementById('state').textContent = source.readyState === EventSource.CLOSED
      ? 'refused: too many pages of this dashboard are open; close one and reload'
      : 'disconnected (retrying)';
};
source.onopen = () => { document.getElementById('state').textContent = 'live'; };
)JS";

/// The body of the 503 that refuses a stream past kMaxStreams.
std::string stream_limit_message() {
  return "this dashboard already streams to " + std::to_string(Dashboard::kMaxStreams) +
         " clients, its limit; close one of its pages and reload\n";
}

}  // namespace

Dashboard::Dashboard() = default;

Dashboard::~Dashboard() { stop(); }

std::string Dashboard::page_html(const std::string& title) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html_escape(title) +
         "</title><style>\nbody{font-family:sans-serif;margin:24px;color:#222}h1{font-size:20px}"
         "#charts{display:flex;flex-wrap:wrap;gap:16px}.chart{border:1px solid #ddd;padding:6px}"
         ".title{font-weight:bold;font-size:13px}svg text{font-size:11px;fill:#333}"
         ".plot{fill:#fbfbfb;stroke:#999}.line{fill:none;stroke:#1f77b4;stroke-width:1.5}\n"
         "</style></head><body>\n<h1>" + html_escape(title) +
         "</h1>\n<p><span id=\"state\">connecting</span> &middot; <span id=\"points\">0</span> "
         "events &middot; <span id=\"last\"></span></p>\n<div id=\"charts\"></div>\n<script>" +
         kScript + "</script>\n</body></html>\n";
}

Status Dashboard::start(int port, const ServeOptions& options) {
  if (running()) return Error{"the dashboard is already serving at " + url()};
  if (port < 0 || port > 65535) {
    return Error{"the dashboard's port must be in [0, 65535] (0: a free one), not " + std::to_string(port)};
  }
  auto server = std::make_unique<httplib::Server>();
  server->new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
  // SO_REUSEADDR only: cpp-httplib also sets SO_REUSEPORT, which would let a second
  // server (another run) bind the same port and take half of its connections.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const std::string page = page_html(options.title);
  server->Get("/", [page](const httplib::Request&, httplib::Response& res) {
    res.set_content(page, "text/html; charset=utf-8");
  });
  server->Get("/events", [this](const httplib::Request&, httplib::Response& res) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (streams_ >= kMaxStreams) {
        res.status = 503;
        res.set_header("Connection", "close");
        res.set_content(stream_limit_message(), "text/plain; charset=utf-8");
        return;
      }
      ++streams_;  // given back when httplib drops the response, however the stream ends
    }
    res.set_header("Cache-Control", "no-cache");
    auto sent = std::make_shared<size_t>(0);  // this client's cursor into events_
    auto stream = [this, sent](size_t, httplib::DataSink& sink) {
      std::vector<std::string> batch;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        published_cv_.wait_for(lock, std::chrono::seconds(1),
                               [&] { return stopping_ || events_.size() > *sent; });
        if (stopping_) return false;
        batch.assign(events_.begin() + static_cast<std::ptrdiff_t>(*sent), events_.end());
        *sent = events_.size();
      }
      std::string text;
      for (const std::string& e : batch) text += "data: " + e + "\n\n";
      if (text.empty()) text = ":\n\n";  // idle: a comment, which also finds a vanished client
      return sink.write(text.data(), text.size());  // false (client gone): the stream ends
    };
    auto release_slot = [this](bool) {
      std::lock_guard<std::mutex> lock(mutex_);
      --streams_;
    };
    res.set_chunked_content_provider("text/event-stream", stream, release_slot);
  });
  int bound = port;
  if (port == 0) {
    bound = server->bind_to_any_port(options.host);
  } else if (!server->bind_to_port(options.host, port)) {
    bound = -1;
  }
  if (bound < 0) {
    return Error{"the dashboard cannot listen on " + options.host + ":" + std::to_string(port) +
                 " (is the port in use, or the address not this machine's?)"};
  }
  stopping_ = false;
  host_ = options.host;
  port_ = bound;
  server_ = std::move(server);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // Until the thread runs its accept loop, Server::stop() would do nothing (and a stop()
  // right after start() would then wait forever for the thread).
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return Status();
}

void Dashboard::stop() {
  if (!running()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  published_cv_.notify_all();
  server_->stop();
  thread_.join();
  server_.reset();
}

std::string Dashboard::url() const { return "http://" + host_ + ":" + std::to_string(port_) + "/"; }

void Dashboard::publish(const std::string& json) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(json);
  }
  published_cv_.notify_all();
}

int Dashboard::streams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return streams_;
}

size_t Dashboard::published() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

}  // namespace weft::monitor
