#pragma once
// A minimal key-value store over TCP for the torchrun-style rendezvous, what PyTorch's
// TCPStore is: rank 0 serves it at MASTER_ADDR:MASTER_PORT and every rank (rank 0 too)
// connects to it as a client. Gloo's `rendezvous::Context::connectFullMesh` exchanges the
// ranks' addresses through it (gloo_communicator.h); this Gloo ships only file, hash,
// prefix and redis stores.
//
//   TcpStore store({.host = "10.0.0.1", .port = 29500, .serve = rank == 0,
//                   .timeout = std::chrono::seconds(300)});
//   store.set("rank_1", bytes);                // overwrites
//   store.wait({"rank_0"});                    // until set, or a gloo::IoException
//   std::vector<char> v = store.get("rank_0");  // waits as wait() does
//
// The protocol, one request and its answer at a time per connection (u32 little-endian
// lengths): `S key value` answered `k`; `G key` answered `v value`, or `n` while the key
// is not set. wait() asks every 10 ms until each key is set or the timeout passes.
// Clients retry connecting until the timeout (rank 0 may start last). The server keeps
// serving until the TcpStore that runs it is destroyed; errors are gloo::IoException
// (gloo's Store interface returns no status).

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace weft::collective {

struct TcpStoreOptions {
  std::string host;  ///< Where rank 0 serves (MASTER_ADDR): a name or an address.
  int port = 0;      ///< MASTER_PORT.
  bool serve = false;  ///< Rank 0: listen on `port` (every interface) before connecting.
  /// How long connecting, and each wait() without its own timeout, may take.
  std::chrono::milliseconds timeout = std::chrono::seconds(300);
};

class TcpStore : public gloo::rendezvous::Store {
 public:
  /// Starts the server (with `serve`) and connects; gloo::IoException when the port
  /// cannot be listened on or the server does not answer within the timeout.
  explicit TcpStore(const TcpStoreOptions& options);
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  class Server;
  /// One request and its answer.
  char request(char op, const std::string& key, const std::vector<char>* value, std::vector<char>* answer);

  TcpStoreOptions options_;
  std::unique_ptr<Server> server_;
  std::mutex mutex_;  // one request at a time on the connection
  int fd_ = -1;
};

}  // namespace weft::collective
