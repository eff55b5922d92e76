// The dashboard server: the page, the event stream with its backfill, loopback by default,
// a client that disconnects mid-stream, and the errors. (serve_chromium_test opens the
// page in a browser during a run.)
#include "runtime/monitor/serve.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

namespace weft::monitor {
namespace {

std::string event(int step) { return "{\"step\":" + std::to_string(step) + ",\"loss\":1.5}"; }

/// Reads /events until at least `want` events arrived (or 30 s passed), then disconnects.
std::vector<std::string> read_events(int port, size_t want) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(30, 0);
  std::string buffer;
  std::vector<std::string> events;
  client.Get("/events", [&](const char* data, size_t size) {
    buffer.append(data, size);
    for (size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
      const std::string message = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (message.rfind("data: ", 0) == 0) events.push_back(message.substr(6));
    }
    return events.size() < want;  // false: this client goes away
  });
  return events;
}

TEST(Dashboard, ServesThePageAndBackfillsThenStreams) {
  Dashboard dash;
  ASSERT_TRUE(dash.start(0, {.title = "mlp <1>"}).ok());
  ASSERT_GT(dash.port(), 0);
  EXPECT_EQ(dash.url(), "http://127.0.0.1:" + std::to_string(dash.port()) + "/");

  httplib::Client client("127.0.0.1", dash.port());
  httplib::Result page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<title>mlp &lt;1&gt;</title>"), std::string::npos);
  EXPECT_NE(page->body.find("new EventSource('/events')"), std::string::npos);
  EXPECT_EQ(page->body.find("<script src"), std::string::npos);  // nothing from the network

  for (int step = 1; step <= 3; ++step) dash.publish(event(step));
  std::atomic<bool> done{false};
  std::thread later([&] {  // published while the client is already streaming
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int step = 4; step <= 6; ++step) dash.publish(event(step));
    done = true;
  });
  std::vector<std::string> got = read_events(dash.port(), 6);
  later.join();
  ASSERT_EQ(got.size(), 6u);
  for (int step = 1; step <= 6; ++step) EXPECT_EQ(got[step - 1], event(step));
}

TEST(Dashboard, AClientThatDisconnectsChangesNothingForTheOthers) {
  Dashboard dash;
  ASSERT_TRUE(dash.start(0).ok());
  for (int step = 1; step <= 5; ++step) dash.publish(event(step));
  EXPECT_GE(read_events(dash.port(), 2).size(), 2u);  // reads some, then hangs up
  // The training loop goes on publishing, never waiting for anyone.
  const auto start = std::chrono::steady_clock::now();
  for (int step = 6; step <= 2000; ++step) dash.publish(event(step));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  std::vector<std::string> all = read_events(dash.port(), 2000);
  ASSERT_EQ(all.size(), 2000u);
  EXPECT_EQ(all.back(), event(2000));
  EXPECT_EQ(dash.published(), 2000u);
}

/// An IPv4 address of this machine that is not loopback, or "".
std::string non_loopback_address() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof(text));
    if (std::string(text).rfind("127.", 0) != 0) found = text;
  }
  freeifaddrs(list);
  return found;
}

TEST(Dashboard, ListensOnLoopbackUnlessAsked) {
  const std::string other = non_loopback_address();
  if (other.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 address to try";
  Dashboard local;
  ASSERT_TRUE(local.start(0).ok());
  EXPECT_TRUE(httplib::Client("127.0.0.1", local.port()).Get("/"));
  httplib::Client outside(other, local.port());
  outside.set_connection_timeout(2, 0);
  EXPECT_FALSE(outside.Get("/")) << "reached through " << other;

  Dashboard everywhere;
  ASSERT_TRUE(everywhere.start(0, {.host = "0.0.0.0"}).ok());
  EXPECT_TRUE(httplib::Client(other, everywhere.port()).Get("/"));
}

TEST(Dashboard, Errors) {
  Dashboard first;
  ASSERT_TRUE(first.start(0).ok());
  Dashboard second;
  Status s = second.start(first.port());
  EXPECT_EQ(s.to_string(), "error: the dashboard cannot listen on 127.0.0.1:" + std::to_string(first.port()) +
                               " (is the port in use, or the address not this machine's?)");
  EXPECT_EQ(first.start(0).to_string(), "error: the dashboard is already serving at " + first.url());
  first.stop();
  EXPECT_FALSE(first.running());
  EXPECT_FALSE(httplib::Client("127.0.0.1", first.port()).Get("/"));  // stopped
}

}  // namespace
}  // namespace weft::monitor
