#include "metrics/metrics_server.h"

#include <CivetServer.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "metrics/health_server.h"

namespace ppu::op {

namespace {
void reply(mg_connection* conn, int code, const char* status, const std::string& body, const char* extra = "") {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: %zu\r\n"
            "%sConnection: close\r\n\r\n",
            code, status, body.size(), extra);
  mg_write(conn, body.data(), body.size());
}
}  // namespace

struct MetricsServer::Handler : public CivetHandler {
  std::shared_ptr<prometheus::Registry> registry;
  MetricsAuthorizer* auth;
  Handler(std::shared_ptr<prometheus::Registry> r, MetricsAuthorizer* a) : registry(std::move(r)), auth(a) {}

  bool handleGet(CivetServer*, mg_connection* conn) override {
    if (auth) {
      const char* h = mg_get_header(conn, "Authorization");
      AuthDecision d = auth->check(h ? h : "", "/metrics");
      if (d.http_status == 401) {
        reply(conn, 401, "Unauthorized", "Unauthorized: " + d.reason + "\n",
              "WWW-Authenticate: Bearer realm=\"ppu-operator\"\r\n");
        return true;
      }
      if (d.http_status == 403) {
        reply(conn, 403, "Forbidden", "Forbidden: " + d.reason + "\n");
        return true;
      }
      if (d.http_status != 200) {
        spdlog::warn("/metrics: {}", d.reason);
        reply(conn, 500, "Internal Server Error", "authorization failed: " + d.reason + "\n");
        return true;
      }
    }
    reply(conn, 200, "OK", prometheus::TextSerializer().Serialize(registry->Collect()));
    return true;
  }
};

MetricsServer::MetricsServer(const std::string& addr, std::shared_ptr<prometheus::Registry> registry,
                             MetricsAuthorizer* auth)
    : handler_(std::make_unique<Handler>(std::move(registry), auth)) {
  std::vector<std::string> opts = {"listening_ports", listen_spec(addr), "num_threads", "2"};
  try {
    server_ = std::make_unique<CivetServer>(opts);
  } catch (const std::exception& e) {
    throw std::runtime_error("--metrics-addr '" + addr + "': cannot listen (" + e.what() + ")");
  }
  server_->addHandler("/metrics", handler_.get());
}

MetricsServer::~MetricsServer() {
  if (server_) server_->close();
}

int MetricsServer::port() const {
  auto ports = server_->getListeningPorts();
  return ports.empty() ? 0 : ports[0];
}

}  // namespace ppu::op
