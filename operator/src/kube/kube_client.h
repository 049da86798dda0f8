// KubeClient: the Kubernetes REST API over libcurl + nlohmann::json. Thread-safe; reuses
// connections through a pool of curl handles. Calls return the HTTP status and the decoded body
// (a metav1.Status on errors); transport failures come back as status 0 with `error` set, so
// callers decide what to retry. Watches stream one JSON event per line to a callback.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/kube_api.h"
#include "kube/kubeconfig.h"

namespace ppu::op {

using json = nlohmann::json;

class KubeClient : public KubeApi {
 public:
  explicit KubeClient(RestConfig cfg);
  ~KubeClient() override;
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  const RestConfig& config() const { return cfg_; }

  Response get(ResourceKind r, const std::string& ns, const std::string& name) override;
  // One page of a list (limit/continue in o).
  Response list(ResourceKind r, const std::string& ns, const ListOptions& o = {});
  Response list_all(ResourceKind r, const std::string& ns, const ListOptions& o = {}) override;
  Response create(ResourceKind r, const std::string& ns, const json& obj) override;
  Response replace(ResourceKind r, const std::string& ns, const std::string& name, const json& obj,
                   const std::string& subresource = "") override;
  Response merge_patch(ResourceKind r, const std::string& ns, const std::string& name, const json& patch,
                       const std::string& subresource = "") override;
  // Server-side apply (application/apply-patch+yaml; JSON is valid YAML).
  Response apply(ResourceKind r, const std::string& ns, const std::string& name, const json& obj,
                 const std::string& field_manager, bool force = true, const std::string& subresource = "");
  Response remove(ResourceKind r, const std::string& ns, const std::string& name,
                  const std::string& propagation = "Background", const std::string& uid = "",
                  int64_t grace_period_s = -1) override;
  WatchEnd watch(ResourceKind r, const std::string& ns, const ListOptions& o, int timeout_s,
                 const std::function<void(const json&)>& on_event, const std::function<bool()>& should_stop) override;

  // Plain HTTP GET of a URL outside the API server (metrics scraping).
  static Response http_get_text(const std::string& url, double timeout_s, std::string& text_out);

 private:
  Response request(const std::string& method, const std::string& path, const std::string& body,
                   const std::string& content_type);
  void* acquire();
  void release(void* h);
  void configure(void* handle, std::vector<std::string>& header_storage, void** header_list);

  RestConfig cfg_;
  std::mutex mu_;
  std::vector<void*> idle_;
};

// "a=b,c=d" encoded for a query string.
std::string url_escape(const std::string& s);

}  // namespace ppu::op
