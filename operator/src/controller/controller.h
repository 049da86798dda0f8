// Controller: informers for PPUJobs and the Pods/Services/ConfigMaps/NetworkPolicies/batch Jobs
// they own (selected by the ppu.dev/job label) plus the export Jobs' pods (label ppu.dev/export)
// and, with --force-delete-on-lost-node, the Nodes (their Ready condition only: a node that turns
// NotReady or is deleted enqueues the jobs with a pod on it), a work queue of job keys, and worker
// threads that run
// reconcile() on the cached state and execute the resulting actions. Any change to a job or an
// owned object enqueues the job; failures are retried with per-job exponential back-off. A
// creation the API server refused is remembered per job until a pass creates everything, so
// the next reconcile can report it (PodCreationFailed) while the retries continue.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "controller/executor.h"
#include "kube/informer.h"
#include "kube/kube_api.h"
#include "kube/work_queue.h"
#include "metrics/operator_metrics.h"
#include "reconcile/reconciler.h"

namespace ppu::op {

struct ControllerOptions {
  std::string ns;  // empty = all namespaces
  int workers = 4;
  ReconcileOptions reconcile;
};

class Controller {
 public:
  Controller(KubeApi& client, ControllerOptions opts, OperatorMetrics* metrics = nullptr);
  ~Controller();

  void start_informers();  // caches fill; nothing is written
  // Waits for the caches, then begins reconciling (after leader election, if any). Returns
  // early, starting nothing, if `cancel` becomes true while waiting.
  void start_workers(const std::atomic<bool>* cancel = nullptr);
  void stop();
  bool synced() const;

  void enqueue(const std::string& key) { queue_.add(key); }
  // Latest scraped progress of a job (set by the scraper; read by reconcile).
  void set_progress(const std::string& key, const ScrapedProgress& p);
  std::vector<json> jobs() const { return jobs_->list(); }
  std::vector<json> pods_of(const std::string& ns, const std::string& job) const { return pods_->by_job(ns, job); }

  // Test hooks.
  Informer& job_informer() { return *jobs_; }
  Informer& pod_informer() { return *pods_; }
  uint64_t reconciles() const { return reconciles_.load(); }

 private:
  void on_job(const json& obj, Informer::Change c);
  // Enqueues the job named by the object's `label` (ppu.dev/job, or ppu.dev/export on export pods).
  void on_owned(const json& obj, const char* label);
  // A node that is not Ready (or was deleted) enqueues every job with a pod bound to it.
  void on_node(const json& node, Informer::Change c);
  void worker();
  void process(const std::string& key);
  void update_phase_gauge();

  KubeApi& client_;
  ControllerOptions opts_;
  OperatorMetrics* metrics_;
  Executor executor_;
  WorkQueue queue_;
  std::unique_ptr<Informer> jobs_, pods_, services_, configmaps_, netpols_;  // netpols_ may be null
  std::unique_ptr<Informer> export_jobs_, export_pods_;                      // batch/v1 Jobs, their pods
  std::unique_ptr<Informer> workloads_, priority_classes_;                   // with --kueue only
  std::unique_ptr<Informer> nodes_;                                          // with --force-delete-on-lost-node only
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> reconciles_{0};
  std::atomic<bool> stopped_{false};
  mutable std::mutex progress_mu_;
  std::map<std::string, ScrapedProgress> progress_;
  std::map<std::string, CreationRefusal> refusals_;  // guarded by progress_mu_
};

}  // namespace ppu::op
