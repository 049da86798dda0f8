// MetricsServer: serves a prometheus-cpp registry as text exposition on /metrics (civetweb),
// optionally only to requests whose bearer token a MetricsAuthorizer accepts: 401 without a
// valid token, 403 for a user without `get` on /metrics, 500 when the review itself failed.
#pragma once

#include <memory>
#include <string>

#include <prometheus/registry.h>

#include "metrics/metrics_auth.h"

class CivetServer;

namespace ppu::op {

class MetricsServer {
 public:
  // `addr` as host:port or :port; `auth` may be null (no authentication). Throws
  // std::runtime_error naming --metrics-addr when it cannot listen.
  MetricsServer(const std::string& addr, std::shared_ptr<prometheus::Registry> registry, MetricsAuthorizer* auth);
  ~MetricsServer();
  int port() const;

 private:
  struct Handler;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<CivetServer> server_;
};

}  // namespace ppu::op
