#include "engine/comm/reach_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
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

// A non-blocking socket connecting to `address` ("ip:port"), or -1 when it does not parse.
int start_connect(const std::string& address, int* connect_errno) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return -1;
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  if (inet_pton(AF_INET, address.substr(0, colon).c_str(), &peer.sin_addr) != 1) return -1;
  const int port = std::atoi(address.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return -1;
  peer.sin_port = htons(static_cast<uint16_t>(port));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  *connect_errno = connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof(peer)) == 0 ? 0 : errno;
  return fd;
}

// The connect's outcome within `timeout` milliseconds (the socket from start_connect).
Reach finish_connect(int fd, int connect_errno, int timeout_ms) {
  if (connect_errno == 0) return Reach::Answered;
  if (connect_errno == ECONNREFUSED) return Reach::Refused;
  if (connect_errno != EINPROGRESS) return Reach::Silent;
  pollfd p{fd, POLLOUT, 0};
  if (poll(&p, 1, timeout_ms) != 1) return Reach::Silent;
  int error = 0;
  socklen_t len = sizeof(error);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
  if (error == 0) return Reach::Answered;
  return error == ECONNREFUSED ? Reach::Refused : Reach::Silent;
}

// probe_reach, then the listener's close: the end of the stream within what is left of `timeout`.
bool answers_within(const std::string& address, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  auto left_ms = [&] {
    return static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
  };
  int connect_errno = 0;
  const int fd = start_connect(address, &connect_errno);
  if (fd < 0) return false;
  bool answers = finish_connect(fd, connect_errno, left_ms()) == Reach::Answered;
  if (answers) {
    pollfd p{fd, POLLIN, 0};
    char byte = 0;
    answers = poll(&p, 1, left_ms()) == 1 && recv(fd, &byte, 1, 0) == 0;
  }
  close(fd);
  return answers;
}

// `probe` of every address, each on a thread of its own: all answers within one probe's time.
template <class Answer, class Probe>
std::vector<Answer> all_at_once(const std::vector<std::string>& addresses, Probe probe) {
  std::vector<std::future<Answer>> probes;
  probes.reserve(addresses.size());
  for (const auto& address : addresses) probes.push_back(std::async(std::launch::async, probe, std::cref(address)));
  std::vector<Answer> answers;
  answers.reserve(addresses.size());
  for (auto& p : probes) answers.push_back(p.get());
  return answers;
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
  int connect_errno = 0;
  const int fd = start_connect(address, &connect_errno);
  if (fd < 0) return Reach::Silent;
  const Reach reach = finish_connect(fd, connect_errno, static_cast<int>(timeout.count()));
  close(fd);
  return reach;
}

std::vector<Reach> probe_reach_all(const std::vector<std::string>& addresses, std::chrono::milliseconds timeout) {
  return all_at_once<Reach>(addresses, [timeout](const std::string& address) { return probe_reach(address, timeout); });
}

std::vector<bool> processes_answer(const std::vector<std::string>& addresses, std::chrono::milliseconds timeout) {
  return all_at_once<bool>(addresses,
                           [timeout](const std::string& address) { return answers_within(address, timeout); });
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
