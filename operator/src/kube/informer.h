// Informer: a local cache of one resource type (optionally one namespace and label selector),
// kept true by list + watch from the last resourceVersion with bookmarks. Reconnects after
// errors and server time-outs; relists on 410 Gone (and reports the objects that vanished
// meanwhile as deletions). Calls `on_change` for every add/update/delete, from its own thread.
// An optional `prune` maps each object to what the cache keeps of it (client-go's transform):
// handlers and getters only ever see pruned objects. by_job() indexes objects by the value of
// the label they are selected by (the key of label_selector's first term, e.g. ppu.dev/job).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kube/kube_api.h"

namespace ppu::op {

class Informer {
 public:
  enum class Change { Added, Modified, Deleted };
  using Handler = std::function<void(const json& obj, Change)>;
  using Prune = std::function<void(json& obj)>;

  Informer(KubeApi& client, ResourceKind kind, std::string ns, std::string label_selector, Handler on_change,
           Prune prune = nullptr);
  ~Informer();

  void start();
  void stop();
  bool synced() const { return synced_.load(); }

  std::optional<json> get(const std::string& ns, const std::string& name) const;
  std::vector<json> list() const;
  // Objects in namespace `ns` whose selecting label (ppu.dev/job, ppu.dev/export) is `job`.
  std::vector<json> by_job(const std::string& ns, const std::string& job) const;

  // Test hook: abort the current watch connection as if the network dropped it.
  void drop_watch() { drop_.store(true); }
  uint64_t relists() const { return relists_.load(); }
  uint64_t watch_restarts() const { return watch_restarts_.load(); }

 private:
  void run();
  bool relist();
  void apply(const json& in, Change c);

  KubeApi& client_;
  ResourceKind resource_;
  std::string ns_, selector_, index_label_;
  Handler on_change_;
  Prune prune_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, drop_{false}, synced_{false};
  std::atomic<uint64_t> relists_{0}, watch_restarts_{0};
  std::string rv_;
  mutable std::mutex mu_;
  std::map<std::string, json> items_;                       // ns/name → object
  std::map<std::string, std::set<std::string>> job_index_;  // ns/<index label value> → keys
};

}  // namespace ppu::op
