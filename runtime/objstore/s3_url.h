// S3Url: a location in S3-compatible storage, written `s3://BUCKET/PREFIX` wherever a directory
// may be (checkpoint.dir, ppu-export --checkpoint). parse() accepts a bucket name as S3 names
// them (3-63 characters of lower-case letters, digits, '.' and '-', starting and ending with a
// letter or digit) and a prefix of any characters but a leading '/', which it normalises to end
// in one '/' (empty: the bucket's root); it throws std::invalid_argument naming `what` (the
// setting or flag that held it) and saying what is wrong. key(name) is PREFIX + name.
#pragma once

#include <string>

namespace ppu {

struct S3Url {
  std::string bucket;
  std::string prefix;  // "" or ends in '/'

  static bool is_s3(const std::string& location);
  static S3Url parse(const std::string& location, const std::string& what);
  std::string key(const std::string& name) const { return prefix + name; }
  std::string text() const { return "s3://" + bucket + "/" + prefix; }
};

}  // namespace ppu
