#include "common/crash_report.h"

#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <initializer_list>

namespace ppu {

namespace {

const char* g_program = "ppu";

void write_str(const char* s) {
  const ssize_t n = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)n;
}

// Only async-signal-safe calls: write(2), backtrace_symbols_fd (no malloc), signal, raise.
// backtrace() is loaded (libgcc) before any signal by install_crash_report.
void on_fatal_signal(int sig) {
  write_str(g_program);
  write_str(": fatal signal ");
  const char* name = sigabbrev_np(sig);
  write_str(name != nullptr ? name : "?");
  write_str("; native stack:\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

void install_crash_report(const char* program) {
  g_program = program;
  void* warm[1];
  backtrace(warm, 1);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_fatal_signal);
}

}  // namespace ppu
