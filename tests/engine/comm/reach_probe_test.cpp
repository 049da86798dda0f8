// ReachListener, probe_reach and processes_answer (engine/comm/reach_probe.h) on loopback: a
// listening process answers, a stopped one too (the kernel accepts for it) but its process does
// not (processes_answer), a closed port is refused, and an address that does not parse is silent. A host that drops
// packets (silent) is the process tests' cut (rank_netns.py), which no loopback test can make.
#include "engine/comm/reach_probe.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "../common/free_port.h"

namespace ppu {
namespace {

using namespace std::chrono_literals;

TEST(ReachProbe, AListenerAnswersAndItsClosedPortIsRefused) {
  auto listener = std::make_unique<ReachListener>("127.0.0.1", 1);
  const std::string address = listener->address();
  ASSERT_EQ(address.rfind("127.0.0.1:", 0), 0u) << address;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(probe_reach(address, 500ms), Reach::Answered) << address;
  EXPECT_EQ(processes_answer({address, address}, 2000ms), (std::vector<bool>{true, true})) << address;
  listener.reset();
  EXPECT_EQ(probe_reach(address, 500ms), Reach::Refused) << address;
  EXPECT_EQ(processes_answer({address}, 500ms), std::vector<bool>{false}) << "a closed port: " << address;
  EXPECT_EQ(probe_reach("127.0.0.1:" + std::to_string(testing::free_port()), 500ms), Reach::Refused);
}

TEST(ReachProbe, AStoppedProcessStillAnswers) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // listens, says where, then stops itself
    ReachListener listener("127.0.0.1", 1);
    const std::string address = listener.address() + "\n";
    if (write(ready[1], address.data(), address.size()) < 0) _exit(1);
    raise(SIGSTOP);
    pause();  // continued: listens until killed
    _exit(0);
  }
  close(ready[1]);
  char buffer[64] = {};
  const auto n = read(ready[0], buffer, sizeof(buffer) - 1);
  close(ready[0]);
  ASSERT_GT(n, 0);
  std::string address(buffer, static_cast<size_t>(n));
  address.pop_back();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  EXPECT_EQ(probe_reach(address, 500ms), Reach::Answered) << "a stopped process's port: " << address;
  EXPECT_EQ(processes_answer({address}, 300ms), std::vector<bool>{false}) << "a stopped process: " << address;
  kill(child, SIGCONT);
  EXPECT_EQ(processes_answer({address}, 5000ms), std::vector<bool>{true}) << "continued: " << address;
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  EXPECT_EQ(probe_reach(address, 500ms), Reach::Refused) << "a killed process's port: " << address;
}

TEST(ReachProbe, AnAddressThatDoesNotParseIsSilent) {
  EXPECT_EQ(probe_reach("", 100ms), Reach::Silent);
  EXPECT_EQ(probe_reach("no-port", 100ms), Reach::Silent);
  EXPECT_EQ(probe_reach("not.an.ip:80", 100ms), Reach::Silent);
  EXPECT_EQ(probe_reach("127.0.0.1:99999", 100ms), Reach::Silent);
  EXPECT_EQ(processes_answer({"", "no-port"}, 100ms), (std::vector<bool>{false, false}));
  EXPECT_STREQ(reach_name(Reach::Refused), "refused");
}

}  // namespace
}  // namespace ppu
