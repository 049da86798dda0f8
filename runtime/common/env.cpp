#include "common/env.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <stdexcept>

namespace ppu {

std::string env_string(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(v, &end, 10);
  if (*end != '\0' || errno == ERANGE || parsed < INT_MIN || parsed > INT_MAX)
    throw std::invalid_argument(std::string("environment variable ") + name + "='" + v + "' is not an integer");
  return static_cast<int>(parsed);
}

}  // namespace ppu
