// install_crash_report: on a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) print the
// signal and the native call stack to stderr, then die of the same signal (the exit status and
// a core dump are as without it). A rank that crashes in a pod or under ppu-launch thus leaves
// a stack in its log instead of only "exited with code 139". Function names of the executable
// itself need it linked with -rdynamic (CMake: ENABLE_EXPORTS); shared libraries' come anyway.
#pragma once

namespace ppu {

void install_crash_report(const char* program);

}  // namespace ppu
