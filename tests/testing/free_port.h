#pragma once
// A TCP port nobody listens on now, for a test's torchrun-style rendezvous
// (MASTER_PORT): the kernel picks one for a socket bound to port 0, which is then closed.
// Another process could take it in between; tests bind it within milliseconds.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace weft::testing {

inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

}  // namespace weft::testing
