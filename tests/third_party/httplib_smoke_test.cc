// cpp-httplib (//third_party:httplib, the live dashboard's server): a server on a loopback
// port of the system's choosing answers a client's GET.
#include <httplib.h>

#include <gtest/gtest.h>

#include <thread>

TEST(HttplibSmoke, ServesAGetOnLoopback) {
  httplib::Server server;
  server.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content("weft", "text/plain"); });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::yield();
  httplib::Client client("127.0.0.1", port);
  auto res = client.Get("/");
  server.stop();
  serving.join();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "weft");
}
