#pragma once
// The live training dashboard: an HTTP server (cpp-httplib, Debian's libcpp-httplib-dev)
// on a thread of its own, serving a self-contained page that draws the run as it goes,
// updated through Server-Sent Events.
//
//   monitor::Dashboard dash;
//   WEFT_RETURN_IF_ERROR(dash.start(/*port=*/8080));           // 127.0.0.1 unless asked
//   std::printf("dashboard: %s\n", dash.url().c_str());
//   dash.publish(R"({"step":1,"loss":2.3})");                  // from the training loop
//
// RunLog::serve (monitor.h) starts one and publishes every recorded step and epoch.
//
//   GET /        the page: inline script and SVG, nothing from the network; a chart per
//                series (loss, lr, examples/s, CPU and resident memory, GPU memory when
//                the events carry it, each metric by its dotted name, new names as they
//                appear); `#points` counts the events it has drawn
//   GET /events  text/event-stream: every event published so far (so a page opened
//                mid-run backfills the whole run), then each new one as it is published
//
// Publishing only appends to a list under a lock and wakes the streams: it never waits
// for a client. Each client is served by one of kWorkers server threads, and a stream
// holds its thread until it ends, writing what it has not sent yet; a client that
// disconnects ends its stream (the write fails), and the others and the training loop go
// on. An idle stream sends an SSE comment every second, which is also how a vanished
// client is noticed. At most kMaxStreams streams are open at once; the next is refused
// with 503 and a line saying why, so that streams never take every thread and `/` always
// answers.

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ir/status.h"

namespace httplib {
class Server;
}

namespace weft::monitor {

struct ServeOptions {
  /// The address to listen on: loopback by default, so the run is not visible to the
  /// network unless asked ("0.0.0.0": every interface).
  std::string host = "127.0.0.1";
  /// The page's title.
  std::string title = "weft training run";
};

class Dashboard {
 public:
  /// Threads serving requests (cpp-httplib's pool, sized here rather than by the core count).
  static constexpr int kWorkers = 16;
  /// Event streams open at once; a request for one more gets 503. Below kWorkers, so the
  /// page and refusals are always served.
  static constexpr int kMaxStreams = 8;
  static_assert(kMaxStreams < kWorkers, "streams must leave threads to answer the page");

  Dashboard();
  ~Dashboard();  ///< Stops the server, ending every stream.
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  /// Listens on options.host:port (port 0: a free port, see port()) and serves from a
  /// thread of its own. An error names the address when it cannot listen there, and the
  /// port when it is not one (outside [0, 65535]).
  Status start(int port, const ServeOptions& options = {});
  /// Ends every stream and stops serving (also done by the destructor).
  void stop();
  bool running() const { return thread_.joinable(); }
  int port() const { return port_; }
  /// `http://HOST:PORT/`.
  std::string url() const;

  /// Sends `json` (one JSON object, one line) to every client now and to every later
  /// one. Never blocks on a client.
  void publish(const std::string& json);
  /// Events published so far.
  size_t published() const;
  /// Event streams open now (at most kMaxStreams).
  int streams() const;

  /// The page served at `/`, titled `title`.
  static std::string page_html(const std::string& title);

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string host_;
  int port_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable published_cv_;
  std::vector<std::string> events_;
  int streams_ = 0;  ///< Under mutex_.
  std::atomic<bool> stopping_{false};
};

}  // namespace weft::monitor
