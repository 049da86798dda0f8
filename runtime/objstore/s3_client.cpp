#include "objstore/s3_client.h"

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace ppu {

namespace {

std::string env_or(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &n, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

size_t append_body(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// Codes S3 answers when trying again later may succeed.
bool retryable_code(const std::string& code) {
  return code == "SlowDown" || code == "RequestTimeout" || code == "InternalError" || code == "ServiceUnavailable" ||
         code == "RequestTimeTooSkewed";
}

// libcurl's global state, set up once before the first handle (curl_global_init is not
// thread-safe before 7.84; this runs under C++'s static-initialisation guarantee).
void global_init_once() {
  static const bool done = [] { return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; }();
  if (!done) throw S3Error("libcurl could not be initialised", 0, "", false);
}

}  // namespace

S3Settings S3Settings::from_environment() {
  S3Settings s;
  s.endpoint = env_or("AWS_ENDPOINT_URL_S3", env_or("AWS_ENDPOINT_URL"));
  s.region = env_or("AWS_REGION", env_or("AWS_DEFAULT_REGION", s.region));
  return s;
}

std::string S3Settings::endpoint_or_default() const {
  std::string e = endpoint.empty() ? "https://s3." + region + ".amazonaws.com" : endpoint;
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

S3Credentials S3Credentials::from_environment() {
  S3Credentials c;
  c.access_key = env_or("AWS_ACCESS_KEY_ID");
  c.secret_key = env_or("AWS_SECRET_ACCESS_KEY");
  c.session_token = env_or("AWS_SESSION_TOKEN");
  if (c.access_key.empty())
    throw std::invalid_argument("the environment variable AWS_ACCESS_KEY_ID is not set: an s3:// location needs it");
  if (c.secret_key.empty())
    throw std::invalid_argument(
        "the environment variable AWS_SECRET_ACCESS_KEY is not set: an s3:// location needs it");
  return c;
}

struct S3Client::Handle {
  CURL* curl = nullptr;
  ~Handle() {
    if (curl != nullptr) curl_easy_cleanup(curl);
  }
};

S3Client::S3Client(S3Settings settings, S3Credentials credentials, std::string bucket)
    : settings_(std::move(settings)),
      credentials_(std::move(credentials)),
      bucket_(std::move(bucket)),
      handle_(std::make_unique<Handle>()) {
  global_init_once();
  handle_->curl = curl_easy_init();
  if (handle_->curl == nullptr) throw S3Error("libcurl could not make a handle", 0, "", false);
}

S3Client::~S3Client() = default;

std::string S3Client::url(const std::string& key, const std::string& query) const {
  const std::string endpoint = settings_.endpoint_or_default();
  std::string base;
  if (settings_.path_style) {
    base = endpoint + "/" + bucket_;
  } else {
    const auto scheme_end = endpoint.find("://");
    const auto host_at = scheme_end == std::string::npos ? 0 : scheme_end + 3;
    base = endpoint.substr(0, host_at) + bucket_ + "." + endpoint.substr(host_at);
  }
  // Each segment of the key percent-encoded, the '/' between them kept (S3's canonical URI).
  std::string path;
  std::size_t from = 0;
  for (std::size_t slash = key.find('/');; slash = key.find('/', from)) {
    path += escape(key.substr(from, slash == std::string::npos ? std::string::npos : slash - from));
    if (slash == std::string::npos) break;
    path += '/';
    from = slash + 1;
  }
  return base + "/" + path + (query.empty() ? "" : "?" + query);
}

std::string S3Client::escape(const std::string& text) const {
  char* e = curl_easy_escape(handle_->curl, text.data(), static_cast<int>(text.size()));
  std::string out = e != nullptr ? e : "";
  curl_free(e);
  return out;
}

S3Client::Answer S3Client::request(const std::string& method, const std::string& key, const std::string& query,
                                   const std::string* body) {
  const std::lock_guard<std::mutex> lock(mutex_);
  CURL* curl = handle_->curl;
  curl_easy_reset(curl);
  Answer answer;
  const std::string target = url(key, query);
  const std::string sigv4 = "aws:amz:" + settings_.region + ":s3";
  curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(curl, CURLOPT_USERNAME, credentials_.access_key.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, credentials_.secret_key.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(settings_.connect_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(settings_.stall_s)));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  // No "Expect:" override here: libcurl 7.88 signs an emptied header it then does not send, and
  // the service rejects the signature (measured against SeaweedFS).
  const std::string payload_hash = sha256_hex(body != nullptr ? *body : std::string());
  curl_slist* headers = nullptr;
  const std::string hash_header = "x-amz-content-sha256: " + payload_hash;
  headers = curl_slist_append(headers, hash_header.c_str());
  const std::string token_header = "x-amz-security-token: " + credentials_.session_token;
  if (!credentials_.session_token.empty()) headers = curl_slist_append(headers, token_header.c_str());
  if (method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  if (body != nullptr) {
    headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK)
    throw S3Error(method + " " + target + ": " + curl_easy_strerror(rc) + " (no answer from the S3 service)", 0, "",
                  true);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  curl_off_t length = -1;
  curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  answer.content_length = static_cast<int64_t>(length);
  return answer;
}

void S3Client::fail(const std::string& method, const std::string& key, const Answer& answer) const {
  const S3ErrorBody error = parse_error_body(answer.body);
  const bool retryable = answer.status >= 500 || answer.status == 429 || retryable_code(error.code);
  std::string what = method + " s3://" + bucket_ + "/" + key + " at " + settings_.endpoint_or_default() + ": HTTP " +
                     std::to_string(answer.status);
  if (!error.code.empty()) what += " " + error.code;
  if (!error.message.empty()) what += ": " + error.message;
  if (answer.status == 403)
    what += " (check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the region, " + settings_.region + ")";
  throw S3Error(what, answer.status, error.code, retryable);
}

void S3Client::put(const std::string& key, const std::string& bytes) {
  const Answer a = request("PUT", key, "", &bytes);
  if (a.status != 200) fail("PUT", key, a);
}

std::optional<std::string> S3Client::get(const std::string& key) {
  Answer a = request("GET", key, "", nullptr);
  if (a.status == 404) return std::nullopt;
  if (a.status != 200) fail("GET", key, a);
  return std::move(a.body);
}

std::optional<int64_t> S3Client::size(const std::string& key) {
  const Answer a = request("HEAD", key, "", nullptr);
  if (a.status == 404) return std::nullopt;
  if (a.status != 200) fail("HEAD", key, a);
  return a.content_length;
}

std::vector<S3Object> S3Client::list(const std::string& prefix, int page_size) {
  std::vector<S3Object> all;
  std::string token;
  do {
    // SigV4 signs the query in parameter order: these are sorted by name.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + escape(token) + "&";
    query += "list-type=2&max-keys=" + std::to_string(page_size) + "&prefix=" + escape(prefix);
    const Answer a = request("GET", "", query, nullptr);
    if (a.status != 200) fail("LIST", prefix + "*", a);
    S3ListPage page = parse_list_page(a.body);
    for (auto& o : page.objects) all.push_back(std::move(o));
    token = page.truncated ? page.next_token : "";
  } while (!token.empty());
  return all;
}

void S3Client::remove(const std::string& key) {
  const Answer a = request("DELETE", key, "", nullptr);
  if (a.status != 204 && a.status != 200 && a.status != 404) fail("DELETE", key, a);
}

void S3Client::create_bucket() {
  const Answer a = request("PUT", "", "", nullptr);
  if (a.status == 200) return;
  if (parse_error_body(a.body).code == "BucketAlreadyOwnedByYou") return;
  fail("CREATE BUCKET", "", a);
}

}  // namespace ppu
