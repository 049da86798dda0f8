#include "metrics/metrics_auth.h"

#include <openssl/sha.h>

#include "kube/typed_object.h"

#include <cstdio>
#include <string_view>

namespace ppu::op {

namespace {
std::string sha256_hex(const std::string& s) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  constexpr size_t kDigits = 2 * static_cast<size_t>(SHA256_DIGEST_LENGTH);
  char hex[kDigits + 1];
  for (size_t i = 0; i < SHA256_DIGEST_LENGTH; ++i) std::snprintf(hex + 2 * i, 3, "%02x", d[i]);
  return {hex, kDigits};
}
}  // namespace

AuthDecision MetricsAuthorizer::check(const std::string& authorization, const std::string& path) {
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.size() <= kBearer.size() || authorization.compare(0, kBearer.size(), kBearer) != 0)
    return AuthDecision{401, "", "a bearer token is required"};
  std::string token = authorization.substr(kBearer.size());
  while (!token.empty() && (token.back() == ' ' || token.back() == '\r')) token.pop_back();
  const std::string key = sha256_hex(token) + "|" + path;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second.first > now) return it->second.second;
  }
  AuthDecision d = review(token, path);
  if (d.http_status != 500) {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = cache_.begin(); it != cache_.end();) it = it->second.first <= now ? cache_.erase(it) : std::next(it);
    if (cache_.size() < 4096)
      cache_[key] = {
          now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(ttl_s_)),
          d};
  }
  return d;
}

AuthDecision MetricsAuthorizer::review(const std::string& token, const std::string& path) {
  {
    std::lock_guard<std::mutex> l(mu_);
    ++reviews_;
  }
  json tr = typed_object(ResourceKind::TokenReview, {{"spec", {{"token", token}}}});
  Response r = client_.create(ResourceKind::TokenReview, "", tr);
  if (!r.ok()) return AuthDecision{500, "", "TokenReview failed: " + r.describe()};
  const json st = r.body.value("status", json::object());
  if (!st.value("authenticated", false))
    return AuthDecision{
        401, "", "token not authenticated" + (st.contains("error") ? ": " + st["error"].get<std::string>() : "")};
  const json user = st.value("user", json::object());
  const std::string name = user.value("username", std::string());
  json spec = {{"user", name}, {"nonResourceAttributes", {{"path", path}, {"verb", "get"}}}};
  if (user.contains("uid")) spec["uid"] = user["uid"];
  if (user.contains("groups")) spec["groups"] = user["groups"];
  if (user.contains("extra")) spec["extra"] = user["extra"];
  json sar = typed_object(ResourceKind::SubjectAccessReview, {{"spec", spec}});
  r = client_.create(ResourceKind::SubjectAccessReview, "", sar);
  if (!r.ok()) return AuthDecision{500, name, "SubjectAccessReview failed: " + r.describe()};
  const json sst = r.body.value("status", json::object());
  if (!sst.value("allowed", false)) return AuthDecision{403, name, "user \"" + name + "\" may not get " + path};
  return AuthDecision{200, name, "allowed"};
}

}  // namespace ppu::op
