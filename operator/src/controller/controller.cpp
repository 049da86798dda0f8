#include "controller/controller.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>

#include "kube/cache_pruning.h"
#include "kube/rfc3339.h"
#include "reconcile/job_constants.h"
#include "reconcile/job_spec.h"
#include "reconcile/job_status.h"
#include "reconcile/kueue_workload.h"
#include "reconcile/node_health.h"
#include "reconcile/ppujob_status.h"
#include "reconcile/rendezvous.h"

namespace ppu::op {

namespace {
bool owned_by(const json& obj, const std::string& uid) {
  const json& md = obj["metadata"];
  if (!md.contains("ownerReferences")) return false;
  for (const auto& o : md["ownerReferences"])
    if (o.value("uid", "") == uid && o.value("controller", false)) return true;
  return false;
}
}  // namespace

Controller::Controller(KubeApi& client, ControllerOptions opts, OperatorMetrics* metrics)
    : client_(client), opts_(std::move(opts)), metrics_(metrics), executor_(client) {
  jobs_ = std::make_unique<Informer>(client_, ResourceKind::PPUJob, opts_.ns, "",
                                     [this](const json& o, Informer::Change c) { on_job(o, c); });
  auto owned = [this](const json& o, Informer::Change) { on_owned(o, kJobLabel); };
  pods_ = std::make_unique<Informer>(client_, ResourceKind::Pod, opts_.ns, kJobLabel, owned, prune_pod);
  services_ = std::make_unique<Informer>(client_, ResourceKind::Service, opts_.ns, kJobLabel, owned);
  configmaps_ = std::make_unique<Informer>(client_, ResourceKind::ConfigMap, opts_.ns, kJobLabel, owned);
  if (opts_.reconcile.network_policy)
    netpols_ = std::make_unique<Informer>(client_, ResourceKind::NetworkPolicy, opts_.ns, kJobLabel, owned);
  // The export Job's status changes (Complete, Failed) and its pods' (the termination message)
  // each bring a pass of the PPUJob, like the rank pods' do.
  export_jobs_ = std::make_unique<Informer>(client_, ResourceKind::Job, opts_.ns, kJobLabel, owned, prune_job);
  export_pods_ = std::make_unique<Informer>(
      client_, ResourceKind::Pod, opts_.ns, kExportLabel,
      [this](const json& o, Informer::Change) { on_owned(o, kExportLabel); }, prune_pod);
  // Kueue's decisions arrive as changes of the job's Workload (admitted, evicted).
  if (opts_.reconcile.kueue) {
    workloads_ = std::make_unique<Informer>(client_, ResourceKind::Workload, opts_.ns, kJobLabel, owned);
    // A class created after the job that names it: the job waits (PriorityClassNotFound) until then.
    priority_classes_ = std::make_unique<Informer>(client_, ResourceKind::WorkloadPriorityClass, "", "",
                                                   [this](const json&, Informer::Change) {
                                                     for (const auto& j : jobs_->list()) queue_.add(object_key(j));
                                                   });
  }
  // A lost node: the jobs whose pod is stuck terminating on it (reconcile/node_health.h).
  if (opts_.reconcile.force_delete_on_lost_node)
    nodes_ = std::make_unique<Informer>(
        client_, ResourceKind::Node, "", "", [this](const json& o, Informer::Change c) { on_node(o, c); }, prune_node);
}

Controller::~Controller() { stop(); }

void Controller::start_informers() {
  for (Informer* i : {nodes_.get(), pods_.get(), services_.get(), configmaps_.get(), netpols_.get(), export_jobs_.get(),
                      export_pods_.get(), workloads_.get(), priority_classes_.get(), jobs_.get()})
    if (i) i->start();
}

void Controller::start_workers(const std::atomic<bool>* cancel) {
  // Reconciling against half-filled caches would re-create what exists: wait for the lists.
  while (!synced()) {
    if (stopped_ || (cancel && cancel->load())) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& j : jobs_->list()) queue_.add(object_key(j));
  for (int i = 0; i < opts_.workers; ++i) workers_.emplace_back([this] { worker(); });
}

void Controller::stop() {
  if (stopped_.exchange(true)) return;
  queue_.shutdown();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  for (Informer* i : {jobs_.get(), pods_.get(), services_.get(), configmaps_.get(), netpols_.get(), export_jobs_.get(),
                      export_pods_.get(), workloads_.get(), priority_classes_.get(), nodes_.get()})
    if (i) i->stop();
}

bool Controller::synced() const {
  return jobs_->synced() && pods_->synced() && services_->synced() && configmaps_->synced() &&
         (!netpols_ || netpols_->synced()) && export_jobs_->synced() && export_pods_->synced() &&
         (!workloads_ || (workloads_->synced() && priority_classes_->synced())) && (!nodes_ || nodes_->synced());
}

void Controller::set_progress(const std::string& key, const ScrapedProgress& p) {
  bool changed;
  {
    std::lock_guard<std::mutex> l(progress_mu_);
    auto& cur = progress_[key];
    changed = cur != p;
    cur = p;
  }
  if (changed) queue_.add(key);
}

void Controller::on_job(const json& obj, Informer::Change c) {
  const std::string key = object_key(obj);
  if (c == Informer::Change::Deleted) {
    std::lock_guard<std::mutex> l(progress_mu_);
    progress_.erase(key);
    refusals_.erase(key);
    if (metrics_) metrics_->remove_job(obj["metadata"].value("namespace", ""), obj["metadata"]["name"]);
  }
  queue_.add(key);
  update_phase_gauge();
}

void Controller::on_owned(const json& obj, const char* label) {
  const json& md = obj["metadata"];
  if (!md.contains("labels") || !md["labels"].contains(label)) return;
  queue_.add(md.value("namespace", std::string()) + "/" + md["labels"][label].get<std::string>());
}

void Controller::on_node(const json& node, Informer::Change c) {
  if (c != Informer::Change::Deleted && node_health(&node) == NodeHealth::Ready) return;
  const std::string name = node["metadata"].value("name", std::string());
  for (const auto& pod : pods_->list())
    if (node_name(pod) == name) on_owned(pod, kJobLabel);
}

void Controller::update_phase_gauge() {
  if (!metrics_) return;
  std::map<std::string, int> counts, exports;
  int waiting = 0;
  for (const auto& j : jobs_->list()) {
    const PPUJobStatus st = status_of(j);
    if (st.phase) counts[to_string(*st.phase)]++;
    if (const Condition* c = st.condition(condition::kExported)) exports[c->reason]++;
    if (const Condition* c = st.condition(condition::kAdmitted);
        c && !c->is_true() && st.phase != JobPhase::Succeeded && st.phase != JobPhase::Failed)
      ++waiting;
  }
  metrics_->set_jobs_by_phase(counts);
  metrics_->set_exports_by_reason(exports);
  metrics_->set_jobs_waiting_for_admission(waiting);
}

void Controller::worker() {
  while (auto key = queue_.get()) {
    process(*key);
    queue_.done(*key);
    if (metrics_) metrics_->set_queue_depth(queue_.depth());
  }
}

void Controller::process(const std::string& key) {
  auto t0 = std::chrono::steady_clock::now();
  const auto slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  auto job = jobs_->get(ns, name);
  if (!job) {
    queue_.forget(key);
    return;
  }
  Observed in;
  in.job = *job;
  in.now = now_seconds();
  in.options = opts_.reconcile;
  const std::string uid = (*job)["metadata"].value("uid", std::string());
  // Only objects this job controls: a same-named job re-created with a new uid must not adopt
  // the previous incarnation's pods (they are garbage-collected).
  for (auto& p : pods_->by_job(ns, name)) {
    if (!owned_by(p, uid)) continue;
    if (is_rendezvous_pod(p)) in.rendezvous_pod = std::move(p);
    else in.pods.push_back(std::move(p));
  }
  // The nodes the job's terminating pods are bound to (absent from in.nodes: no such Node).
  if (nodes_) {
    std::vector<const json*> all;
    for (const auto& p : in.pods) all.push_back(&p);
    if (in.rendezvous_pod) all.push_back(&*in.rendezvous_pod);
    for (const json* p : all) {
      const std::string node = node_name(*p);
      if (node.empty() || !pod_terminating(*p) || in.nodes.count(node)) continue;
      if (auto n = nodes_->get("", node)) in.nodes[node] = std::move(*n);
    }
  }
  JobSpec spec = parse_job(*job);
  if (auto s = services_->get(ns, service_name(spec)); s && owned_by(*s, uid)) in.service = s;
  if (auto s = services_->get(ns, rendezvous_name(spec)); s && owned_by(*s, uid)) in.rendezvous_service = s;
  if (auto c = configmaps_->get(ns, config_map_name(spec)); c && owned_by(*c, uid)) in.config_map = c;
  if (netpols_) {
    if (auto n = netpols_->get(ns, network_policy_name(spec)); n && owned_by(*n, uid)) in.network_policy = n;
    if (auto n = netpols_->get(ns, export_network_policy_name(spec)); n && owned_by(*n, uid))
      in.export_network_policy = n;
  }
  if (auto x = export_jobs_->get(ns, export_job_name(spec)); x && owned_by(*x, uid)) {
    // Its pods are owned by the Job: only those of this incarnation of it.
    const std::string job_uid = (*x)["metadata"].value("uid", std::string());
    for (auto& p : export_pods_->by_job(ns, name))
      if (owned_by(p, job_uid)) in.export_pods.push_back(std::move(p));
    in.export_job = std::move(x);
  }
  if (workloads_) {
    if (auto w = workloads_->get(ns, workload_name(spec)); w && owned_by(*w, uid)) in.workload = std::move(w);
    if (!spec.priority_class.empty())
      if (auto c = priority_classes_->get("", spec.priority_class)) in.priority_value = (*c).value("value", int64_t{0});
  }
  {
    std::lock_guard<std::mutex> l(progress_mu_);
    auto it = progress_.find(key);
    if (it != progress_.end()) in.progress = it->second;
    auto rf = refusals_.find(key);
    if (rf != refusals_.end()) in.refusal = rf->second;
  }

  Decision d = reconcile(in);
  ExecResult r = executor_.execute(in.job, d);
  reconciles_++;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  if (r.ok && metrics_) {
    if (d.gang_restart) metrics_->gang_restart();
    if (d.force_deletions > 0) metrics_->force_deletions(d.force_deletions);
    if (d.recovery_backoffs > 0) metrics_->recovery_backoffs(d.recovery_backoffs);
  }

  if (metrics_) {
    const PPUJobStatus st = status_of(in.job);
    metrics_->set_job_status(ns, name, static_cast<int>(st.ready_ranks.value_or(0)), spec.replicas,
                             static_cast<int>(st.restart_count.value_or(0)),
                             static_cast<int>(st.recoveries.value_or(0)));
    // A final result (the status this pass wrote, else the one observed) sets the job's gauges,
    // also after an operator restart, when no scrape will ever run for the finished job.
    const PPUJobStatus* current = &st;
    for (const auto& a : d.actions)
      if (const auto* u = std::get_if<UpdateStatus>(&a); r.ok && u) current = &u->status;
    if (const auto& res = current->result; res && res->outer_round && res->perplexity)
      metrics_->set_job_result(ns, name, *res->outer_round, std::strtod(res->perplexity->c_str(), nullptr));
    metrics_->reconcile_done(r.ok ? "success" : (r.conflict ? "conflict" : "error"), secs);
  }
  bool refusal_cleared = false;
  {
    std::lock_guard<std::mutex> l(progress_mu_);
    if (r.refusal) refusals_[key] = *r.refusal;
    else if (r.ok) refusal_cleared = refusals_.erase(key) > 0;
  }
  if (!r.ok) {
    if (!r.conflict) spdlog::warn("reconcile {}: {} (retry in {:.3f}s)", key, r.error, queue_.next_delay(key));
    queue_.add_rate_limited(key);
    return;
  }
  queue_.forget(key);
  if (refusal_cleared) queue_.add(key);  // one more pass turns PodCreationFailed False
  if (d.requeue_after_s >= 0) queue_.add_after(key, std::max(d.requeue_after_s, 0.05));
  for (const auto& a : d.actions)
    if (const auto* e = std::get_if<RecordEvent>(&a)) spdlog::info("{}: {} {}", key, e->reason, e->message);
}

}  // namespace ppu::op
