// MetricsAuthorizer: decides whether an HTTP request to the operator's /metrics may be served,
// the way controller-runtime's secure metrics and kube-rbac-proxy do: the bearer token is
// authenticated by the API server (TokenReview) and the user it names must be allowed
// `get` on the non-resource URL (SubjectAccessReview, e.g. through a ClusterRole with
// nonResourceURLs: [/metrics]). Decisions are cached per token for `ttl_s` (errors never are).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "kube/kube_client.h"

namespace ppu::op {

struct AuthDecision {
  int http_status = 500;  // 200 allowed, 401 no/invalid token, 403 not authorized, 500 review failed
  std::string user;       // the authenticated user, when known
  std::string reason;     // for the response body and logs
};

class MetricsAuthorizer {
 public:
  explicit MetricsAuthorizer(KubeClient& client, double ttl_s = 60) : client_(client), ttl_s_(ttl_s) {}
  // `authorization` is the request's Authorization header ("" when absent).
  AuthDecision check(const std::string& authorization, const std::string& path = "/metrics");
  uint64_t reviews() const { return reviews_; }  // TokenReviews sent (tests: the cache works)

 private:
  AuthDecision review(const std::string& token, const std::string& path);
  KubeClient& client_;
  double ttl_s_;
  std::mutex mu_;
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, AuthDecision>> cache_;  // sha256(token)|path
  uint64_t reviews_ = 0;
};

}  // namespace ppu::op
