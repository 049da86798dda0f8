// KubeApi: the part of the Kubernetes REST API the controller machinery uses (executor,
// informers, leader election), as an interface over the kinds of kube/resource_kind.h.
// KubeClient implements it over HTTP; the unit tests implement it in memory
// (tests/operator/kube/fake_kube.h), so the 404/409 handling, relists and lease hand-over are
// tested without an API server. Calls return the HTTP status and the decoded body (a
// metav1.Status on errors); status 0 means no response (transport failure).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "kube/resource_kind.h"

namespace ppu::op {

using json = nlohmann::json;

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

// "<namespace>/<name>" of an object: the key of the informers' caches and of the work queue.
std::string object_key(const json& obj);

class KubeApi {
 public:
  virtual ~KubeApi() = default;

  // Defaults of the arguments are repeated, identical, by every implementation.
  virtual Response get(ResourceKind r, const std::string& ns, const std::string& name) = 0;
  // A full list (follows `continue`), items merged into one body; metadata.resourceVersion kept.
  // Like the server's, the items carry no kind/apiVersion: the list's "<Kind>List" does.
  virtual Response list_all(ResourceKind r, const std::string& ns, const ListOptions& o = {}) = 0;
  virtual Response create(ResourceKind r, const std::string& ns, const json& obj) = 0;
  // PUT; 409 Conflict when obj's metadata.resourceVersion is not the stored one.
  virtual Response replace(ResourceKind r, const std::string& ns, const std::string& name, const json& obj,
                           const std::string& subresource = "") = 0;
  virtual Response merge_patch(ResourceKind r, const std::string& ns, const std::string& name, const json& patch,
                               const std::string& subresource = "") = 0;
  // With `uid`, the server deletes only that incarnation (409 if the name now holds another).
  // grace_period_s >= 0 overrides the object's own grace period (0 with a pod: force deletion,
  // the object leaves the API at once without waiting for its kubelet); < 0 keeps it.
  virtual Response remove(ResourceKind r, const std::string& ns, const std::string& name,
                          const std::string& propagation = "Background", const std::string& uid = "",
                          int64_t grace_period_s = -1) = 0;
  // Streams watch events ({"type":..., "object":...}) from o.resource_version with bookmarks on.
  // Returns Gone on 410 (the caller must relist), Closed when the server ended the stream,
  // Error on transport/HTTP failure, Stopped when should_stop() became true.
  virtual WatchEnd watch(ResourceKind r, const std::string& ns, const ListOptions& o, int timeout_s,
                         const std::function<void(const json&)>& on_event,
                         const std::function<bool()>& should_stop) = 0;

  // Optimistic concurrency: get, mutate (return false = nothing to do), PUT with the read
  // resourceVersion; on 409 Conflict read again and retry, up to `attempts` times.
  Response update_with_retry(ResourceKind r, const std::string& ns, const std::string& name,
                             const std::function<bool(json&)>& mutate, const std::string& subresource = "",
                             int attempts = 5);
};

}  // namespace ppu::op
