// common/notice.h: inside a NoticeScope the first SIGTERM or SIGINT is recorded, not acted on.
// The handler's state is the process's: every case runs in a child of its own (EXPECT_EXIT),
// whatever ran before it.
#include "common/notice.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace ppu {
namespace {

TEST(Notice, NoneBeforeASignal) {
  EXPECT_EXIT(
      {
        install_notice_handler(1e6);
        std::_Exit(!notice_received() && notice_signal() == 0 && seconds_since_notice() == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Notice, ASignalInsideAScopeIsRecordedWithItsTime) {
  EXPECT_EXIT(
      {
        install_notice_handler(1e6);
        const NoticeScope scope;
        raise(SIGTERM);  // the process is still here after it: the notice was recorded
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        const double since = seconds_since_notice();
        std::_Exit(notice_received() && notice_signal() == SIGTERM && since >= 0.02 && since < 10 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Notice, ASignalOutsideAnyScopeEndsTheProcessAtOnce) {
  EXPECT_EXIT(
      {
        install_notice_handler(1e6);
        raise(SIGINT);
      },
      ::testing::ExitedWithCode(128 + SIGINT), "");
}

TEST(Notice, ASecondSignalEndsTheProcessAtOnce) {
  EXPECT_EXIT(
      {
        install_notice_handler(1e6);
        const NoticeScope scope;
        raise(SIGTERM);
        raise(SIGTERM);
      },
      ::testing::ExitedWithCode(128 + SIGTERM), "");
}

TEST(Notice, ANoticeNotActedOnWithinItsBoundEndsTheProcessThen) {
  EXPECT_EXIT(
      {
        install_notice_handler(0.2, [](double seconds) { fprintf(stderr, "overran after %.1f s\n", seconds); });
        const NoticeScope scope;
        raise(SIGTERM);
        std::this_thread::sleep_for(std::chrono::seconds(30));
      },
      ::testing::ExitedWithCode(128 + SIGTERM), "overran after 0\\.[2-9] s");
}

}  // namespace
}  // namespace ppu
