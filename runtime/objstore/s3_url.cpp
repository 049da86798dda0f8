#include "objstore/s3_url.h"

#include <cctype>
#include <stdexcept>

namespace ppu {

namespace {

constexpr const char* kScheme = "s3://";

std::string bucket_problem(const std::string& b) {
  if (b.size() < 3 || b.size() > 63) return "a bucket name has 3 to 63 characters";
  for (char c : b)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
          c == '-'))
      return "a bucket name has only lower-case letters, digits, '.' and '-'";
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(b.front()) || !alnum(b.back())) return "a bucket name starts and ends with a letter or a digit";
  return "";
}

}  // namespace

bool S3Url::is_s3(const std::string& location) { return location.rfind(kScheme, 0) == 0; }

S3Url S3Url::parse(const std::string& location, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument(what + " is '" + location + "': " + why + " (want s3://BUCKET/PREFIX)");
  };
  if (!is_s3(location)) throw bad("not an s3:// location");
  const std::string rest = location.substr(std::string(kScheme).size());
  const auto slash = rest.find('/');
  S3Url url;
  url.bucket = rest.substr(0, slash);
  if (url.bucket.empty()) throw bad("no bucket");
  if (const std::string problem = bucket_problem(url.bucket); !problem.empty()) throw bad(problem);
  url.prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (!url.prefix.empty() && url.prefix.front() == '/') throw bad("the prefix starts with '/'");
  while (url.prefix.size() >= 2 && url.prefix.substr(url.prefix.size() - 2) == "//") url.prefix.pop_back();
  if (!url.prefix.empty() && url.prefix.back() != '/') url.prefix += '/';
  return url;
}

}  // namespace ppu
