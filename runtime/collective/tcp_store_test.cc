// The rendezvous store with threads as ranks: rank 0 serves, every rank sets its key and
// reads the others'; a key nobody sets times out with its error; a client started before
// the server connects once it listens.
#include "runtime/collective/tcp_store.h"

#include <gloo/common/error.h>
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "tests/testing/free_port.h"

namespace weft::collective {
namespace {

std::vector<char> bytes(const std::string& s) { return std::vector<char>(s.begin(), s.end()); }

TEST(TcpStoreTest, RanksExchangeKeysThroughRankZero) {
  const int port = testing::free_port();
  constexpr int kRanks = 3;
  std::vector<std::string> seen(kRanks);
  std::vector<std::thread> ranks;
  for (int r = kRanks - 1; r >= 0; --r) {  // rank 0 last: the others retry connecting
    ranks.emplace_back([&, r] {
      TcpStore store({.host = "127.0.0.1", .port = port, .serve = r == 0, .timeout = std::chrono::seconds(20)});
      store.set("rank_" + std::to_string(r), bytes("hello from " + std::to_string(r)));
      for (int other = 0; other < kRanks; ++other) {
        std::vector<char> v = store.get("rank_" + std::to_string(other));
        seen[r] += std::string(v.begin(), v.end()) + ";";
      }
      store.set("done_" + std::to_string(r), {});
      // Rank 0 serves until every rank has read everything.
      if (r == 0) store.wait({"done_1", "done_2"});
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(seen[r], "hello from 0;hello from 1;hello from 2;") << r;
}

TEST(TcpStoreTest, SetOverwritesAndEmptyValuesAreValues) {
  TcpStore store({.host = "localhost", .port = testing::free_port(), .serve = true, .timeout = std::chrono::seconds(5)});
  store.set("k", bytes("one"));
  store.set("k", bytes("two"));
  EXPECT_EQ(store.get("k"), bytes("two"));
  store.set("empty", {});
  EXPECT_TRUE(store.get("empty").empty());
}

TEST(TcpStoreTest, AKeyNobodySetsTimesOut) {
  const int port = testing::free_port();
  TcpStore store({.host = "127.0.0.1", .port = port, .serve = true, .timeout = std::chrono::seconds(1)});
  try {
    store.wait({"rank_1"}, std::chrono::milliseconds(200));
    FAIL() << "wait returned";
  } catch (const gloo::IoException& e) {
    EXPECT_EQ(std::string(e.what()), "the rendezvous at 127.0.0.1:" + std::to_string(port) +
                                         ": key \"rank_1\" was not set within 0.2 s (a rank did not start or did "
                                         "not reach it)");
  }
}

TEST(TcpStoreTest, NoServerIsAnErrorAfterTheTimeout) {
  const int port = testing::free_port();
  try {
    TcpStore store({.host = "127.0.0.1", .port = port, .serve = false, .timeout = std::chrono::milliseconds(300)});
    FAIL() << "connected";
  } catch (const gloo::IoException& e) {
    EXPECT_EQ(std::string(e.what()), "the rendezvous at 127.0.0.1:" + std::to_string(port) +
                                         " (MASTER_ADDR:MASTER_PORT) did not answer within 0.3 s: is rank 0 "
                                         "running, and is MASTER_ADDR its address as this host reaches it?");
  }
}

// A MASTER_ADDR that does not resolve was reported as a rank 0 that did not answer.
TEST(TcpStoreTest, AHostThatDoesNotResolveIsNamed) {
  try {
    TcpStore store({.host = "no.such.host.invalid", .port = 29500, .serve = false,
                    .timeout = std::chrono::milliseconds(300)});
    FAIL() << "connected";
  } catch (const gloo::IoException& e) {
    const std::string text = e.what();
    EXPECT_EQ(text.rfind("the rendezvous at no.such.host.invalid:29500 (MASTER_ADDR:MASTER_PORT): the host name "
                         "'no.such.host.invalid' did not resolve within 0.3 s (",
                         0),
              0u)
        << text;
    EXPECT_NE(text.find("): is MASTER_ADDR rank 0's address as this host reaches it?"), std::string::npos) << text;
  }
}

TEST(TcpStoreTest, APortInUseIsAnError) {
  const int port = testing::free_port();
  TcpStore first({.host = "127.0.0.1", .port = port, .serve = true, .timeout = std::chrono::seconds(1)});
  try {
    TcpStore second({.host = "127.0.0.1", .port = port, .serve = true, .timeout = std::chrono::seconds(1)});
    FAIL() << "served twice";
  } catch (const gloo::IoException& e) {
    EXPECT_EQ(std::string(e.what()), "rank 0 cannot serve the rendezvous on port " + std::to_string(port) +
                                         ": Address already in use (is another job using MASTER_PORT=" +
                                         std::to_string(port) + "? choose a free port)");
  }
}

TEST(TcpStoreTest, AServerThatEndedIsAnError) {
  const int port = testing::free_port();
  auto rank0 = std::make_unique<TcpStore>(
      TcpStoreOptions{.host = "127.0.0.1", .port = port, .serve = true, .timeout = std::chrono::seconds(5)});
  TcpStore rank1({.host = "127.0.0.1", .port = port, .serve = false, .timeout = std::chrono::seconds(5)});
  rank1.set("k", bytes("v"));
  rank0.reset();  // rank 0 ends: its server closes every connection
  try {
    rank1.get("k");
    FAIL() << "read from a server that ended";
  } catch (const gloo::IoException& e) {
    EXPECT_EQ(std::string(e.what()),
              "the rendezvous at 127.0.0.1:" + std::to_string(port) + " closed the connection (rank 0 ended?)");
  }
}

}  // namespace
}  // namespace weft::collective
