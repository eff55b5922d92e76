#include "runtime/collective/tcp_store.h"

#include <gloo/common/error.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "runtime/collective/watchdog.h"

namespace weft::collective {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& message) { throw gloo::IoException(message); }

// Whole buffers over a stream socket; false when the peer closed it or it failed.
bool send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool recv_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool send_bytes(int fd, const char* data, size_t n) {
  const uint32_t length = static_cast<uint32_t>(n);  // x86-64: little-endian
  return send_all(fd, &length, 4) && send_all(fd, data, n);
}

bool recv_bytes(int fd, std::vector<char>& out) {
  uint32_t length = 0;
  if (!recv_all(fd, &length, 4)) return false;
  out.resize(length);
  return recv_all(fd, out.data(), length);
}

std::string where(const TcpStoreOptions& o) { return o.host + ":" + std::to_string(o.port); }

// A connected socket to host:port, or -1 when no address answered; `unresolved` is set
// to the resolver's reason when the host name does not resolve, and cleared otherwise.
int connect_once(const std::string& host, int port, std::string& unresolved) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int resolved = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  unresolved = resolved == 0 ? "" : ::gai_strerror(resolved);
  if (resolved != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

}  // namespace

// Rank 0's side: one thread accepting, one per connection answering its requests.
class TcpStore::Server {
 public:
  explicit Server(int port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_ANY);
    address.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listen_fd_, 128) != 0) {
      const std::string reason = std::strerror(errno);
      ::close(listen_fd_);
      fail("rank 0 cannot serve the rendezvous on port " + std::to_string(port) + ": " + reason +
           " (is another job using MASTER_PORT=" + std::to_string(port) + "? choose a free port)");
    }
    acceptor_ = std::thread([this] { accept_connections(); });
  }

  ~Server() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
    acceptor_.join();
    ::close(listen_fd_);
    std::lock_guard<std::mutex> lock(clients_mutex_);
    for (int fd : clients_) ::shutdown(fd, SHUT_RDWR);  // wakes recv()
    for (std::thread& t : threads_) t.join();
    for (int fd : clients_) ::close(fd);
  }

 private:
  void accept_connections() {
    while (!stopping_) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // shut down
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard<std::mutex> lock(clients_mutex_);
      clients_.push_back(fd);
      threads_.emplace_back([this, fd] { answer(fd); });
    }
  }

  // Answers one client's requests until it disconnects (or the server stops).
  void answer(int fd) {
    std::vector<char> key, value;
    char op = 0;
    while (recv_all(fd, &op, 1) && recv_bytes(fd, key)) {
      const std::string name(key.begin(), key.end());
      if (op == 'S') {
        if (!recv_bytes(fd, value)) return;
        {
          std::lock_guard<std::mutex> lock(data_mutex_);
          data_[name] = value;
        }
        if (!send_all(fd, "k", 1)) return;
      } else if (op == 'G') {
        std::unique_lock<std::mutex> lock(data_mutex_);
        auto it = data_.find(name);
        if (it == data_.end()) {
          lock.unlock();
          if (!send_all(fd, "n", 1)) return;
          continue;
        }
        value = it->second;
        lock.unlock();
        if (!send_all(fd, "v", 1) || !send_bytes(fd, value.data(), value.size())) return;
      } else {
        return;  // not this protocol: drop the connection
      }
    }
  }

  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex clients_mutex_;
  std::vector<int> clients_;
  std::vector<std::thread> threads_;
  std::mutex data_mutex_;
  std::map<std::string, std::vector<char>> data_;
};

TcpStore::TcpStore(const TcpStoreOptions& options) : options_(options) {
  if (options_.serve) server_ = std::make_unique<Server>(options_.port);
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  std::string unresolved;
  while ((fd_ = connect_once(options_.host, options_.port, unresolved)) < 0) {
    if (Clock::now() >= deadline && !unresolved.empty()) {
      fail("the rendezvous at " + where(options_) + " (MASTER_ADDR:MASTER_PORT): the host name '" + options_.host +
           "' did not resolve within " + format_seconds(options_.timeout) + " (" + unresolved +
           "): is MASTER_ADDR rank 0's address as this host reaches it?");
    }
    if (Clock::now() >= deadline) {
      fail("the rendezvous at " + where(options_) + " (MASTER_ADDR:MASTER_PORT) did not answer within " +
           format_seconds(options_.timeout) + ": is rank 0 running, and is MASTER_ADDR its address as this host reaches it?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
  server_.reset();
}

char TcpStore::request(char op, const std::string& key, const std::vector<char>* value,
                       std::vector<char>* answer) {
  std::lock_guard<std::mutex> lock(mutex_);
  char reply = 0;
  const bool ok = send_all(fd_, &op, 1) && send_bytes(fd_, key.data(), key.size()) &&
                  (value == nullptr || send_bytes(fd_, value->data(), value->size())) &&
                  recv_all(fd_, &reply, 1) && (reply != 'v' || recv_bytes(fd_, *answer));
  if (!ok) fail("the rendezvous at " + where(options_) + " closed the connection (rank 0 ended?)");
  return reply;
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) { request('S', key, &data, nullptr); }

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key});
  std::vector<char> value;
  request('G', key, nullptr, &value);
  return value;
}

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, options_.timeout); }

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::vector<char> ignored;
  for (const std::string& key : keys) {
    while (request('G', key, nullptr, &ignored) != 'v') {
      if (Clock::now() >= deadline) {
        fail("the rendezvous at " + where(options_) + ": key \"" + key + "\" was not set within " +
             format_seconds(timeout) + " (a rank did not start or did not reach it)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace weft::collective
