#include "metrics/health_server.h"

#include <CivetServer.h>

#include <stdexcept>

namespace ppu::op {

struct HealthServer::Handler : public CivetHandler {
  std::function<bool()> check;
  explicit Handler(std::function<bool()> c) : check(std::move(c)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    bool ok = check();
    const char* body = ok ? "ok\n" : "not ready\n";
    mg_printf(conn, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
              ok ? 200 : 503, ok ? "OK" : "Service Unavailable", std::char_traits<char>::length(body), body);
    return true;
  }
};

std::string listen_spec(const std::string& addr) {
  if (!addr.empty() && addr[0] == ':') return "0.0.0.0" + addr;
  return addr;
}

HealthServer::HealthServer(const std::string& addr, std::function<bool()> healthy, std::function<bool()> ready)
    : healthz_(std::make_unique<Handler>(std::move(healthy))), readyz_(std::make_unique<Handler>(std::move(ready))) {
  std::vector<std::string> opts = {"listening_ports", listen_spec(addr), "num_threads", "2"};
  try {
    server_ = std::make_unique<CivetServer>(opts);
  } catch (const std::exception& e) {
    throw std::runtime_error("--health-addr '" + addr + "': cannot listen (" + e.what() + ")");
  }
  server_->addHandler("/healthz", healthz_.get());
  server_->addHandler("/readyz", readyz_.get());
}

HealthServer::~HealthServer() {
  if (server_) server_->close();
}

int HealthServer::port() const {
  auto ports = server_->getListeningPorts();
  return ports.empty() ? 0 : ports[0];
}

}  // namespace ppu::op
