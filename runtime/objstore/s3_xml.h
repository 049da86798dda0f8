// The XML bodies of S3 answers that S3Client reads (pugixml): a ListObjectsV2 page (each
// object's key and size, whether more pages follow and the token of the next) and an error
// (<Error><Code>, <Message>). Both take the body as received and throw std::runtime_error when
// it is not the document they expect; an error body that does not parse gives empty fields
// (the HTTP status still says what happened).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ppu {

struct S3Object {
  std::string key;
  int64_t size = 0;
};

struct S3ListPage {
  std::vector<S3Object> objects;
  bool truncated = false;
  std::string next_token;  // ContinuationToken of the next page when truncated
};

struct S3ErrorBody {
  std::string code;     // e.g. NoSuchKey, AccessDenied, SignatureDoesNotMatch
  std::string message;  // the service's words
};

S3ListPage parse_list_page(const std::string& xml);
S3ErrorBody parse_error_body(const std::string& xml);

}  // namespace ppu
