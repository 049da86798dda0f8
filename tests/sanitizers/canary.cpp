// A program with one deliberate bug per sanitizer. scripts/sanitize.sh runs it before the unit
// tests and requires each case to be reported (non-zero exit and a report in the log folder),
// so a lane whose instrumentation or report collection is broken fails instead of passing.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

int use_after_free() {
  int* p = new int[4];
  p[0] = 1;
  delete[] p;
  volatile int* q = p;
  return q[0];  // heap-use-after-free (ASan)
}

int signed_overflow(const char* text) {
  volatile int big = std::atoi(text);  // the caller passes INT_MAX
  return big + 1;                      // signed integer overflow (UBSan)
}

int leak() {
  volatile char* p = static_cast<char*>(std::malloc(64));
  p[0] = 'x';
  p = nullptr;  // lost: detected at exit (LeakSanitizer)
  return 0;
}

int data_race() {
  int counter = 0;
  std::thread other([&counter] {
    for (int i = 0; i < 10000; ++i) ++counter;  // unsynchronised with the loop below (TSan)
  });
  for (int i = 0; i < 10000; ++i) ++counter;
  other.join();
  return counter > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s use-after-free|signed-overflow|leak|data-race\n", argv[0]);
    return 2;
  }
  if (std::strcmp(argv[1], "use-after-free") == 0) return use_after_free() == 12345 ? 3 : 0;
  if (std::strcmp(argv[1], "signed-overflow") == 0) return signed_overflow("2147483647") == 0 ? 3 : 0;
  if (std::strcmp(argv[1], "leak") == 0) return leak();
  if (std::strcmp(argv[1], "data-race") == 0) return data_race();
  std::fprintf(stderr, "unknown case '%s'\n", argv[1]);
  return 2;
}
