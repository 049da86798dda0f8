#include "engine/comm/reach_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>

namespace ppu {

namespace {

// The local IPv4 address of the route to host:port (a connected UDP socket sends nothing).
std::string route_source(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) return "127.0.0.1";
  std::string ip = "127.0.0.1";
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text)))
      ip = text;
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return ip;
}

}  // namespace

const char* reach_name(Reach reach) {
  switch (reach) {
    case Reach::Answered: return "answered";
    case Reach::Refused: return "refused";
    case Reach::Silent: return "silent";
  }
  return "silent";
}

Reach probe_reach(const std::string& address, std::chrono::milliseconds timeout) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return Reach::Silent;
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &peer.sin_addr) != 1) return Reach::Silent;
  const int port = std::atoi(address.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return Reach::Silent;
  peer.sin_port = htons(static_cast<uint16_t>(port));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Reach::Silent;
  Reach reach = Reach::Silent;
  if (connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof(peer)) == 0) {
    reach = Reach::Answered;
  } else if (errno == ECONNREFUSED) {
    reach = Reach::Refused;
  } else if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) == 1) {
      int error = 0;
      socklen_t len = sizeof(error);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
      if (error == 0) reach = Reach::Answered;
      else if (error == ECONNREFUSED) reach = Reach::Refused;
    }
  }
  close(fd);
  return reach;
}

std::vector<Reach> probe_reach_all(const std::vector<std::string>& addresses, std::chrono::milliseconds timeout) {
  std::vector<std::future<Reach>> probes;
  probes.reserve(addresses.size());
  for (const auto& address : addresses)
    probes.push_back(std::async(std::launch::async, [&address, timeout] { return probe_reach(address, timeout); }));
  std::vector<Reach> reach;
  reach.reserve(addresses.size());
  for (auto& p : probes) reach.push_back(p.get());
  return reach;
}

ReachListener::ReachListener(const std::string& store_host, int store_port) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(any);
  if (bind(fd_, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0 || listen(fd_, 64) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&any), &len) != 0) {
    close(fd_);
    fd_ = -1;
    return;
  }
  address_ = route_source(store_host, store_port) + ":" + std::to_string(ntohs(any.sin_port));
  acceptor_ = std::thread([this] {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 200) != 1) continue;
      const int conn = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn >= 0) close(conn);
    }
  });
}

ReachListener::~ReachListener() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  if (fd_ >= 0) close(fd_);
}

}  // namespace ppu
