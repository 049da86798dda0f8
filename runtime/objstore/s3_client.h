// S3Client: the object operations a checkpoint needs against one bucket of an S3-compatible
// service (AWS S3, SeaweedFS, MinIO, Ceph, R2, GCS's interoperability API), over libcurl with
// its SigV4 signing. Every request carries the SHA-256 of its body (x-amz-content-sha256), so
// the service refuses a body damaged on the way; a request that fails throws S3Error with the
// HTTP status (0: no answer), the service's code and message, and whether trying again may help
// (retryable: no answer, 5xx, 429 and the codes S3 uses for throttling and timeouts; never a
// refusal such as 403 or a bad signature). get() and size() answer nullopt for a key that does
// not exist; remove() of one that does not exist succeeds. A request that makes no progress for
// `stall_s` is abandoned (retryable). One client is one connection, used by one thread at a time
// (its calls take a lock). The caller retries; this class does not.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "objstore/s3_xml.h"

namespace ppu {

// Where the service is and how to address it. from_environment() reads the standard variables:
// AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (else AWS's own endpoint for the region),
// AWS_REGION or AWS_DEFAULT_REGION (else us-east-1).
struct S3Settings {
  std::string endpoint;  // scheme://host[:port]; empty: https://s3.REGION.amazonaws.com
  std::string region = "us-east-1";
  bool path_style = true;  // ENDPOINT/BUCKET/KEY (every S3-compatible server); false: BUCKET.HOST/KEY
  double connect_timeout_s = 10;
  double stall_s = 30;  // no byte moved for this long: the request is abandoned

  static S3Settings from_environment();
  std::string endpoint_or_default() const;
};

// Credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and (optional) AWS_SESSION_TOKEN;
// from_environment() throws std::invalid_argument naming the variable that is missing.
struct S3Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;

  static S3Credentials from_environment();
};

class S3Error : public std::runtime_error {
 public:
  S3Error(const std::string& what, long http_status, std::string code, bool retryable)
      : std::runtime_error(what), http_status_(http_status), code_(std::move(code)), retryable_(retryable) {}
  long http_status() const { return http_status_; }  // 0: no HTTP answer (refused, reset, stalled)
  const std::string& code() const { return code_; }
  bool retryable() const { return retryable_; }

 private:
  long http_status_;
  std::string code_;
  bool retryable_;
};

class S3Client {
 public:
  S3Client(S3Settings settings, S3Credentials credentials, std::string bucket);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  void put(const std::string& key, const std::string& bytes);
  std::optional<std::string> get(const std::string& key);
  std::optional<int64_t> size(const std::string& key);
  // Every object under prefix, in key order, read page_size keys per request (S3 allows 1000).
  std::vector<S3Object> list(const std::string& prefix, int page_size = 1000);
  void remove(const std::string& key);
  void create_bucket();  // succeeds when this account already owns it

  const std::string& bucket() const { return bucket_; }

 private:
  struct Answer {
    long status = 0;
    std::string body;
    int64_t content_length = -1;
  };
  Answer request(const std::string& method, const std::string& key, const std::string& query, const std::string* body);
  std::string url(const std::string& key, const std::string& query) const;
  std::string escape(const std::string& text) const;
  [[noreturn]] void fail(const std::string& method, const std::string& key, const Answer& answer) const;

  S3Settings settings_;
  S3Credentials credentials_;
  std::string bucket_;
  std::mutex mutex_;
  struct Handle;
  std::unique_ptr<Handle> handle_;
};

}  // namespace ppu
