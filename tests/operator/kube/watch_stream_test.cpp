// KubeClient::watch against a local HTTP server that answers like a kube-apiserver in trouble:
// only well-formed watch events ({"type": string, "object": object}) reach the handler. A
// Status body of a failed request (a 503 while the server restarts) or a stray JSON value used
// to reach it, and the informer read ev["object"] of an event without one (undefined
// behaviour: a segfault of OperatorIT.WatchDroppedOrApiserverRestartedRecovers).
#include <CivetServer.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../common/free_port.h"
#include "kube/kube_client.h"

namespace ppu::op {
namespace {

// Serves one fixed response to every request under its path.
struct Canned : CivetHandler {
  int status;
  std::string body;
  Canned(int s, std::string b) : status(s), body(std::move(b)) {}
  bool handleGet(CivetServer*, mg_connection* c) override {
    mg_printf(c,
              "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
              status, body.size(), body.c_str());
    return true;
  }
};

TEST(WatchStream, OnlyWellFormedEventsReachTheHandler) {
  const int port = ppu::testing::free_port();
  const std::string status_line =
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server is shutting down","code":503})";
  Canned failing(503, status_line + "\n");
  Canned mixed(200, R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})"
                    "\n" +
                        status_line + "\n[1, 2]\n\"text\"\n" + R"({"type":"MODIFIED"})" + "\n" +
                        R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"6"}}})" + "\n");
  CivetServer server({"listening_ports", "127.0.0.1:" + std::to_string(port)});
  server.addHandler("/api/v1/namespaces/failing/pods", &failing);
  server.addHandler("/api/v1/namespaces/mixed/pods", &mixed);

  RestConfig cfg;
  cfg.server = "http://127.0.0.1:" + std::to_string(port);
  KubeClient client(cfg);
  std::vector<std::string> seen;
  const auto on_event = [&](const json& ev) {  // records whatever arrives, well-formed or not
    const bool typed = ev.is_object() && ev.contains("type") && ev["type"].is_string();
    seen.push_back(typed && ev.contains("object") ? ev["type"].get<std::string>() : "malformed " + ev.dump());
  };
  const auto never = [] { return false; };

  EXPECT_EQ(client.watch(ResourceKind::Pod, "failing", {}, 5, on_event, never), WatchEnd::Error);
  EXPECT_TRUE(seen.empty()) << "a 503 Status body is not a watch event";

  EXPECT_EQ(client.watch(ResourceKind::Pod, "mixed", {}, 5, on_event, never), WatchEnd::Closed);
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED", "DELETED"}));
}

}  // namespace
}  // namespace ppu::op
