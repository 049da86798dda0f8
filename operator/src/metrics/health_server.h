// HealthServer: /healthz (the process is alive and not shutting down) and /readyz (caches are
// synced; a standby replica waiting for the leader lease is ready too) over civetweb, the HTTP
// server prometheus-cpp already ships with.
#pragma once

#include <functional>
#include <memory>
#include <string>

class CivetServer;

namespace ppu::op {

class HealthServer {
 public:
  // `addr` as host:port or :port; throws std::runtime_error naming it if it cannot listen.
  HealthServer(const std::string& addr, std::function<bool()> healthy, std::function<bool()> ready);
  ~HealthServer();
  int port() const;

 private:
  struct Handler;
  std::unique_ptr<Handler> healthz_, readyz_;
  std::unique_ptr<CivetServer> server_;
};

// ":8081" → "0.0.0.0:8081" (civetweb and prometheus-cpp want an explicit host or a bare port).
std::string listen_spec(const std::string& addr);

}  // namespace ppu::op
