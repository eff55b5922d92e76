// The dashboard server: the page, the event stream with its backfill, loopback by default,
// a client that disconnects mid-stream, the bound on streams, and the errors. (serve_chromium_test opens the
// page in a browser during a run.)
#include "training/monitor/serve.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

/// A plain socket that sends one `GET path` to 127.0.0.1:port and reads what comes back.
class RawClient {
 public:
  RawClient(int port, const std::string& path) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval wait{.tv_sec = 5, .tv_usec = 0};  // a read that gets nothing for this long fails
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    connected_ = connected_ && send(fd_, request.data(), request.size(), MSG_NOSIGNAL) ==
                                   static_cast<ssize_t>(request.size());
  }
  ~RawClient() { close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  /// Reads until what arrived contains `text`; false when the server closes or stays
  /// silent for 5 s first.
  bool read_until(const std::string& text) {
    while (connected_ && received_.find(text) == std::string::npos) {
      char buffer[4096];
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return false;
      received_.append(buffer, static_cast<size_t>(n));
    }
    return connected_;
  }
  /// The status code of the response (0: none arrived).
  int status() {
    if (!read_until("\r\n\r\n") || received_.rfind("HTTP/1.1 ", 0) != 0) return 0;
    return std::atoi(received_.c_str() + 9);
  }
  const std::string& received() const { return received_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string received_;
};

// Each open stream holds one of the server's threads until the run ends. More clients
// than threads once took them all, and `/` got no answer; past kMaxStreams a stream is
// refused with 503 and a line saying why, the page still answers, and a stream that ends
// gives its place back.
TEST(Dashboard, BoundsTheStreamsSoThatThePageAlwaysAnswers) {
  Dashboard dash;
  ASSERT_TRUE(dash.start(0).ok());
  dash.publish(event(1));
  const int clients = Dashboard::kWorkers + 4;
  std::vector<std::unique_ptr<RawClient>> streams;
  int refused = 0;
  for (int i = 0; i < clients; ++i) {
    auto client = std::make_unique<RawClient>(dash.port(), "/events");
    const int status = client->status();
    ASSERT_TRUE(status == 200 || status == 503) << "client " << i << " got " << status << ": "
                                                << client->received();
    if (status == 200) {
      EXPECT_TRUE(client->read_until("data: " + event(1) + "\n\n")) << client->received();  // the backfill
      streams.push_back(std::move(client));
      continue;
    }
    ++refused;
    const std::string why =
        "this dashboard already streams to 8 clients, its limit; close one of its pages and reload\n";
    EXPECT_TRUE(client->read_until(why)) << client->received();
  }
  EXPECT_EQ(static_cast<int>(streams.size()), Dashboard::kMaxStreams);
  EXPECT_EQ(refused, clients - Dashboard::kMaxStreams);
  EXPECT_EQ(dash.streams(), Dashboard::kMaxStreams);

  RawClient page(dash.port(), "/");
  EXPECT_EQ(page.status(), 200) << page.received();
  // The streams are live: each gets the next event.
  dash.publish(event(2));
  for (auto& stream : streams) EXPECT_TRUE(stream->read_until("data: " + event(2) + "\n\n"));

  // A client that leaves gives its place back once the server notices (its next write,
  // within a second of idling), and a new stream is accepted.
  streams.pop_back();
  int status = 503;
  for (int attempt = 0; attempt < 100 && status == 503; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    dash.publish(event(3 + attempt));
    status = RawClient(dash.port(), "/events").status();
  }
  EXPECT_EQ(status, 200);
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
  // A port is 16 bits: 70000 once listened on 4464, and 65536 on a free port.
  Dashboard third;
  EXPECT_EQ(third.start(70000).to_string(), "error: the dashboard's port must be in [0, 65535] (0: a free one), not 70000");
  EXPECT_EQ(third.start(65536).to_string(), "error: the dashboard's port must be in [0, 65535] (0: a free one), not 65536");
  EXPECT_EQ(third.start(-1).to_string(), "error: the dashboard's port must be in [0, 65535] (0: a free one), not -1");
  EXPECT_FALSE(third.running());
  first.stop();
  EXPECT_FALSE(first.running());
  EXPECT_FALSE(httplib::Client("127.0.0.1", first.port()).Get("/"));  // stopped
}

}  // namespace
}  // namespace weft::monitor
