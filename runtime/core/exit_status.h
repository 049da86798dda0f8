// Why a binary stopped, as an exit code: the one table from failure to exit code that every PPU
// binary (ppu-train, ppu-launch, ppu-plan, ppu-data, ppu-export) uses, with the codes of
// core/job_contract.h. Each error type of the runtime derives from one of the three classes
// below, so its code follows from what it is, not from the catch blocks of a main:
//   ConfigError      2  a bad key, flag or combination: no retry can succeed
//   PeerFailure      3  a peer died or a collective timed out: the gang is restarted
//   UnusableInput    4  data or a checkpoint missing, corrupt or of another kind: no retry can succeed
//   OutOfGroup       5  network.recovery=live: this rank is out of the live group; restart only it
//   LeftOnNotice     128 + signal (143 SIGTERM, 130 SIGINT): the rank acted on a notice and left
//   Retired          0  the job shrank past this rank's slot (docs/RESIZE.md): done, not replaced
//   anything else    1  a crash or an I/O error: the gang is restarted
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace ppu {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PeerFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UnusableInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // What was unusable, for the first words of the message: "data", "checkpoint", ...
  virtual const char* subject() const noexcept { return "input"; }
};

// With network.recovery=live: the live group went on without this rank (it was silent past the
// heartbeat window, or it restarted after the group dropped it). Restarting this rank alone
// brings it back at a round boundary.
class OutOfGroup : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The rank was told to go (SIGTERM, SIGINT: common/notice.h) and left at a round boundary, its
// part of the job's state handed on (live: the others go on without it) or saved (the whole job
// went). Its supervisor treats the code as a rank that is gone: replaced alone under live, the
// gang under gang, nothing when the supervisor itself sent the notice.
class LeftOnNotice : public std::runtime_error {
 public:
  LeftOnNotice(int signal, const std::string& what) : std::runtime_error(what), signal_(signal) {}
  int signal() const noexcept { return signal_; }

 private:
  int signal_;
};

// The job shrank (network.min_ranks, docs/RESIZE.md) and this rank's slot is vacant now: it left
// the live group at a round boundary, the others going on without waiting for it. Its part is
// done, so its code is 0: no supervisor replaces it (the slot is filled again only when the job
// grows). It writes no run summary: the job's result is the members'.
class Retired : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExitStatus {
  int code;
  std::string message;  // "<kind> error: <what()>", the line a binary logs and a rank leaves as its termination message
};

// The table: `e`'s exit code and its message line.
ExitStatus exit_status_of(const std::exception& e);

// A command-line parse error (CLI11's exit code for it, 0 for --help): 0 stays 0, anything else is
// a usage error, 2.
int usage_exit_code(int parser_code);

}  // namespace ppu
