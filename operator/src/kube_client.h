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

#include "kubeconfig.h"

namespace ppu::op {

using json = nlohmann::json;

// A resource type: /api/v1/... for the core group, /apis/<group>/<version>/... otherwise.
struct Resource {
  std::string group, version, plural;
  bool namespaced = true;
  std::string path(const std::string& ns, const std::string& name = "", const std::string& sub = "") const;
};

namespace resources {
extern const Resource pods, services, configmaps, events, leases, ppujobs, networkpolicies;
// Cluster-scoped reviews used to authenticate /metrics scrapers.
extern const Resource tokenreviews, subjectaccessreviews;
const Resource& by_plural(const std::string& plural);
}  // namespace resources

struct Response {
  long status = 0;  // HTTP status; 0 = no response (connection failed, aborted)
  json body;
  std::string error;  // transport error, or the Status message of an API error
  bool ok() const { return status >= 200 && status < 300; }
  std::string describe() const;
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  int limit = 0;
  std::string continue_token;
};

enum class WatchEnd { Closed, Gone, Error, Stopped };

class KubeClient {
 public:
  explicit KubeClient(RestConfig cfg);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  const RestConfig& config() const { return cfg_; }

  Response get(const Resource& r, const std::string& ns, const std::string& name);
  Response list(const Resource& r, const std::string& ns, const ListOptions& o = {});
  // A full list (follows `continue`), items merged into one body; metadata.resourceVersion kept.
  Response list_all(const Resource& r, const std::string& ns, const ListOptions& o = {});
  Response create(const Resource& r, const std::string& ns, const json& obj);
  Response replace(const Resource& r, const std::string& ns, const std::string& name, const json& obj,
                   const std::string& subresource = "");
  Response merge_patch(const Resource& r, const std::string& ns, const std::string& name, const json& patch,
                       const std::string& subresource = "");
  // Server-side apply (application/apply-patch+yaml; JSON is valid YAML).
  Response apply(const Resource& r, const std::string& ns, const std::string& name, const json& obj,
                 const std::string& field_manager, bool force = true, const std::string& subresource = "");
  // With `uid`, the server deletes only that incarnation (409 if the name now holds another).
  Response remove(const Resource& r, const std::string& ns, const std::string& name,
                  const std::string& propagation = "Background", const std::string& uid = "");
  // Optimistic concurrency: get, mutate (return false = nothing to do), PUT with the read
  // resourceVersion; on 409 Conflict read again and retry, up to `attempts` times.
  Response update_with_retry(const Resource& r, const std::string& ns, const std::string& name,
                             const std::function<bool(json&)>& mutate, const std::string& subresource = "",
                             int attempts = 5);

  // Streams watch events ({"type":..., "object":...}) from resource_version with bookmarks on.
  // Returns Gone on 410 (the caller must relist), Closed when the server ended the stream,
  // Error on transport/HTTP failure, Stopped when should_stop() became true.
  WatchEnd watch(const Resource& r, const std::string& ns, const ListOptions& o, int timeout_s,
                 const std::function<void(const json&)>& on_event, const std::function<bool()>& should_stop);

  // Plain HTTP GET of a URL outside the API server (metrics scraping).
  static Response http_get_text(const std::string& url, double timeout_s, std::string& text_out);

 private:
  Response request(const std::string& method, const std::string& path, const std::string& body,
                   const std::string& content_type);
  void* acquire();
  void release(void* h);
  void configure(void* h, std::vector<std::string>& header_storage, void** header_list);

  RestConfig cfg_;
  std::mutex mu_;
  std::vector<void*> idle_;
};

// "a=b,c=d" encoded for a query string.
std::string url_escape(const std::string& s);

}  // namespace ppu::op
