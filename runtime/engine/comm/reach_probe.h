// Reach: whether a peer's host and process can still be reached, told apart the way a survivor
// needs to name a fault (summary recovery.faults, ppu_faults_total{kind}). Every rank of a live
// job listens on an ephemeral TCP port (ReachListener: a thread accepts and closes each
// connection) and advertises "<ip>:<port>", the IP being the one its route to the rendezvous
// store leaves from, which is what its peers reach it by (a pod's IP, a network namespace's,
// loopback). probe_reach() of an advertised address answers within its timeout:
//   Answered  a connection was accepted: the host and the process are there (the kernel accepts
//             for a stopped process too, so a silent peer that answers is stopped or hung);
//   Refused   the host answered and nothing listens: the process is gone (killed, crashed);
//   Silent    no answer: the host, or the path to it, is gone (unreachable: a cut, a lost node).
// No LibTorch; plain sockets.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace ppu {

enum class Reach { Answered, Refused, Silent };
const char* reach_name(Reach reach);

// Connects to `address` ("ip:port") within `timeout`; an address that does not parse is Silent.
Reach probe_reach(const std::string& address, std::chrono::milliseconds timeout);
// Every address at once (a thread each): all answers within one `timeout`.
std::vector<Reach> probe_reach_all(const std::vector<std::string>& addresses, std::chrono::milliseconds timeout);

// Whether the process behind `address` answers within `timeout`: connects and waits for its
// ReachListener's thread to close the connection. Unlike probe_reach's Answered (which the
// kernel gives for a stopped process too), true means the process runs: a stopped or frozen one,
// a killed one and one cut off all give false. Every address at once, within one `timeout`.
std::vector<bool> processes_answer(const std::vector<std::string>& addresses, std::chrono::milliseconds timeout);

class ReachListener {
 public:
  // Listens on every interface; advertises the local IP of the route to store_host:store_port.
  ReachListener(const std::string& store_host, int store_port);
  ~ReachListener();
  ReachListener(const ReachListener&) = delete;
  ReachListener& operator=(const ReachListener&) = delete;

  // "ip:port", or "" when no socket could be opened (probes of this rank then say Silent).
  const std::string& address() const { return address_; }

 private:
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::string address_;
  std::thread acceptor_;
};

}  // namespace ppu
