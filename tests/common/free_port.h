// free_port(): a TCP port on 127.0.0.1 that nothing listens on right now (bind to port 0, read
// the port the kernel chose, close). Shared by the runtime's multi-rank tests and the
// operator's tests; throws when no loopback socket can be bound.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace ppu::testing {

inline int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (fd >= 0) close(fd);
  if (!ok) throw std::runtime_error("free_port: no loopback port to bind");
  return ntohs(addr.sin_port);
}

}  // namespace ppu::testing
