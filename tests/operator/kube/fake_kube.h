// FakeKube: an in-memory KubeApi for unit tests. It keeps objects per resource with
// resourceVersions from one counter, answers like the API server where the operator relies on
// it (409 AlreadyExists on create, 409 Conflict on a stale PUT or a uid precondition, 404
// NotFound, list items without kind/apiVersion, watch events after a resourceVersion, 410 Gone
// from a compacted history) and lets a test inject failures and pause or compact the watch
// history. Thread-safe: informers watch from their own threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kube/kube_api.h"

namespace ppu::op::testing {

class FakeKube : public KubeApi {
 public:
  Response get(ResourceKind kind, const std::string& ns, const std::string& name) override;
  Response list_all(ResourceKind kind, const std::string& ns, const ListOptions& o = {}) override;
  Response create(ResourceKind kind, const std::string& ns, const json& in) override;
  Response replace(ResourceKind kind, const std::string& ns, const std::string& name, const json& in,
                   const std::string& subresource = "") override;
  Response merge_patch(ResourceKind kind, const std::string& ns, const std::string& name, const json& patch,
                       const std::string& subresource = "") override;
  Response remove(ResourceKind kind, const std::string& ns, const std::string& name,
                  const std::string& propagation = "Background", const std::string& uid = "",
                  int64_t grace_period_s = -1) override;
  WatchEnd watch(ResourceKind kind, const std::string& ns, const ListOptions& o, int timeout_s,
                 const std::function<void(const json&)>& on_event, const std::function<bool()>& should_stop) override;

  // The next `times` calls of `verb` (get, list, create, replace, patch, delete, watch) on
  // `kind` answer `status` (0 = no response) without touching the store; times < 0: until
  // clear_failures().
  void fail(const std::string& verb, ResourceKind kind, long status, int times = 1, const std::string& reason = "");
  void clear_failures();

  // Writes obj as the server would after any change (resourceVersion bumped, uid kept or set),
  // with a watch event; returns the stored object.
  json put(ResourceKind kind, json obj);
  std::optional<json> peek(ResourceKind kind, const std::string& ns, const std::string& name) const;
  std::vector<json> objects(ResourceKind kind, const std::string& ns = "") const;
  // Drops the event history: watches from an older resourceVersion end with 410 Gone.
  void compact();
  // While paused, watches deliver nothing (as if the connection hung); events queue up.
  void pause_watches(bool paused);
  // Ends every open watch as the server's time-out would (WatchEnd::Closed).
  void close_watches();
  // "verb plural/ns/name" of every call, in order; a delete with a grace period ends in
  // " grace=<seconds>".
  std::vector<std::string> calls() const;
  int count_calls(const std::string& prefix) const;
  int64_t resource_version() const;

 private:
  struct Event {
    int64_t rv;
    std::string plural, type;
    json object;
  };
  std::optional<Response> injected(const std::string& verb, ResourceKind kind, const std::string& ns,
                                   const std::string& name);
  json store(ResourceKind kind, json obj, const std::string& type);  // mu_ held
  static std::string key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t rv_ = 100, uid_ = 0, generated_ = 0;
  int64_t compacted_ = 0;  // events with rv <= compacted_ are forgotten
  uint64_t closes_ = 0;
  bool paused_ = false;
  std::map<std::string, std::map<std::string, json>> objects_;  // plural -> ns/name -> object
  std::deque<Event> events_;
  struct Failure {
    std::string verb;
    ResourceKind kind;
    std::string reason;
    long status;
    int times;
  };
  std::vector<Failure> failures_;
  std::vector<std::string> calls_;
};

// A label selector of the forms the operator uses: "k", "k=v", comma-separated.
bool matches_selector(const json& obj, const std::string& selector);

}  // namespace ppu::op::testing
