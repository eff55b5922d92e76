// The dashboard in a browser: while a run records steps (a thread here, one every 50 ms),
// headless Chromium, driven through ChromeDriver's WebDriver protocol (Debian's
// `chromium` and `chromium-driver`; tools/setup installs both, so this runs in CI), opens
// the page, which backfills the steps recorded before it connected, and the test watches
// the page draw the steps that arrive while it is open.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "training/monitor/monitor.h"
#include "tests/testing/subprocess.h"

namespace weft::monitor {
namespace {

using nlohmann::json;
using testing::Process;
using testing::run_command;

/// A TCP port free at the moment (bound to port 0, then released).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

/// A WebDriver session of ChromeDriver driving headless Chromium.
class Browser {
 public:
  explicit Browser(int port) : http_("127.0.0.1", port) { http_.set_read_timeout(60, 0); }

  /// POSTs `body` to the session-relative `path`; the reply's "value".
  json post(const std::string& path, const json& body) {
    httplib::Result r = http_.Post((session_.empty() ? "" : "/session/" + session_) + path, body.dump(),
                                   "application/json");
    EXPECT_TRUE(r) << "no reply from chromedriver for " << path;
    if (!r) return json();
    json reply = json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    EXPECT_EQ(r->status, 200) << path << ": " << r->body;
    return reply.is_object() ? reply["value"] : json();
  }
  bool open(const std::string& profile) {
    json args = {"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", "--user-data-dir=" + profile};
    json caps = {{"capabilities",
                  {{"alwaysMatch",
                    {{"browserName", "chrome"},
                     {"goog:chromeOptions", {{"binary", "/usr/bin/chromium"}, {"args", args}}}}}}}};
    json v = post("/session", caps);
    if (!v.is_object() || !v.contains("sessionId")) return false;
    session_ = v["sessionId"];
    return true;
  }
  void close() {
    if (!session_.empty()) http_.Delete("/session/" + session_);
    session_.clear();
  }
  json script(const std::string& body) { return post("/execute/sync", {{"script", body}, {"args", json::array()}}); }

 private:
  httplib::Client http_;
  std::string session_;
};

TEST(DashboardInChromium, PointsArriveWhileThePageIsOpen) {
  ASSERT_EQ(run_command("command -v chromium && command -v chromedriver").exit_code, 0)
      << "headless Chromium and ChromeDriver open the dashboard: install Debian's `chromium` "
         "and `chromium-driver` packages (tools/setup does)";
  RunLog log({"test_accuracy"});
  auto record = [&](int64_t step) {
    log.record({.step = step, .epoch = 1, .loss = 2.0 / static_cast<double>(step), .lr = 1e-3,
                .examples_per_s = 1000, .elapsed_s = 0.05 * static_cast<double>(step)},
               step % 10 == 0 ? std::map<std::string, double>{{"test_accuracy", 0.5}}
                              : std::map<std::string, double>{});
  };
  for (int64_t step = 1; step <= 20; ++step) record(step);  // before the dashboard and the page
  ASSERT_TRUE(log.serve(0, {.title = "chromium test run"}).ok());

  std::atomic<bool> done{false};
  std::thread run([&] {
    for (int64_t step = 21; !done && step <= 100000; ++step) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      record(step);
    }
  });
  const std::string dir = testing::test_tmpdir();
  const int port = free_port();
  Process driver("env HOME=" + dir + " chromedriver --port=" + std::to_string(port));
  ASSERT_TRUE(driver.wait_for("started successfully", 30)) << driver.out();
  Browser browser(port);
  ASSERT_TRUE(browser.open(dir + "/chromium-profile"));
  browser.post("/url", {{"url", log.dashboard().url()}});

  // The page's own count of the events it drew, and its status line, as they change.
  auto points = [&] { return std::stoll(browser.script("return document.getElementById('points').textContent;").get<std::string>()); };
  int64_t first = 0;
  for (int i = 0; i < 300 && (first = points()) < 20; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(first, 20) << "the page did not backfill the steps recorded before it opened";
  int64_t later = first;
  for (int i = 0; i < 300 && (later = points()) < first + 10; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_GE(later, first + 10) << "no step arrived while the page was open";
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // the charts redraw 4 times a second
  json page = browser.script(
      "return {state: document.getElementById('state').textContent,"
      " last: document.getElementById('last').textContent,"
      " lines: document.querySelectorAll('polyline.line').length,"
      " titles: Array.from(document.querySelectorAll('.title')).map(e => e.textContent)};");
  browser.close();
  done = true;
  run.join();
  EXPECT_EQ(page["state"], "live");
  EXPECT_EQ(page["last"].get<std::string>().rfind("step ", 0), 0u) << page.dump();
  const std::vector<std::string> titles = page["titles"];
  for (const char* want : {"loss", "learning rate", "examples/s", "CPU (%)", "resident memory (MiB)", "test_accuracy"}) {
    EXPECT_NE(std::find(titles.begin(), titles.end(), want), titles.end()) << want << " in " << page.dump();
  }
  EXPECT_EQ(page["lines"].get<size_t>(), titles.size());
}

}  // namespace
}  // namespace weft::monitor
