#include "kube/informer.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace ppu::op {

namespace {
// The label a selector selects by: the key of its first term ("a=b,c" -> "a"), "" for none.
std::string selector_label(const std::string& selector) {
  const std::string term = selector.substr(0, selector.find(','));
  return term.substr(0, term.find_first_of("=!"));
}

std::string job_of(const json& obj, const std::string& label) {
  const json& md = obj["metadata"];
  if (!md.contains("labels") || !md["labels"].contains(label)) return "";
  return md.value("namespace", std::string()) + "/" + md["labels"][label].get<std::string>();
}
}  // namespace

Informer::Informer(KubeApi& client, ResourceKind kind, std::string ns, std::string label_selector, Handler on_change,
                   Prune prune)
    : client_(client),
      resource_(kind),
      ns_(std::move(ns)),
      selector_(std::move(label_selector)),
      index_label_(selector_label(selector_)),
      on_change_(std::move(on_change)),
      prune_(std::move(prune)) {}

Informer::~Informer() { stop(); }

void Informer::start() {
  stop_ = false;
  thread_ = std::thread([this] { run(); });
}

void Informer::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::optional<json> Informer::get(const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = items_.find(ns + "/" + name);
  if (it == items_.end()) return std::nullopt;
  return it->second;
}

std::vector<json> Informer::list() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<json> out;
  out.reserve(items_.size());
  for (const auto& [k, v] : items_) out.push_back(v);
  return out;
}

std::vector<json> Informer::by_job(const std::string& ns, const std::string& job) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<json> out;
  auto it = job_index_.find(ns + "/" + job);
  if (it == job_index_.end()) return out;
  for (const auto& k : it->second) out.push_back(items_.at(k));
  return out;
}

void Informer::apply(const json& in, Change c) {
  // managedFields is often the largest part of an object and nothing here reads it.
  json obj = in;
  if (obj.contains("metadata")) obj["metadata"].erase("managedFields");
  if (prune_) prune_(obj);
  const std::string key = object_key(obj);
  const std::string job = job_of(obj, index_label_);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (c == Change::Deleted) {
      items_.erase(key);
      if (!job.empty()) {
        auto it = job_index_.find(job);
        if (it != job_index_.end()) {
          it->second.erase(key);
          if (it->second.empty()) job_index_.erase(it);
        }
      }
    } else {
      items_[key] = obj;
      if (!job.empty()) job_index_[job].insert(key);
    }
  }
  on_change_(obj, c);
}

bool Informer::relist() {
  ListOptions o;
  o.label_selector = selector_;
  Response r = client_.list_all(resource_, ns_, o);
  if (!r.ok()) {
    spdlog::warn("informer {}: list failed: {}", resource(resource_).plural, r.describe());
    return false;
  }
  // List items omit kind/apiVersion (the list carries them, as "<Kind>List"); fill them so
  // cached objects look like watched ones.
  std::string kind = r.body.value("kind", std::string());
  if (kind.size() > 4 && kind.compare(kind.size() - 4, 4, "List") == 0) kind.resize(kind.size() - 4);
  else kind.clear();
  const std::string api_version = r.body.value("apiVersion", std::string());
  std::set<std::string> seen;
  for (auto& item : r.body["items"]) {
    if (!kind.empty() && !item.contains("kind")) item["kind"] = kind;
    if (!api_version.empty() && !item.contains("apiVersion")) item["apiVersion"] = api_version;
    seen.insert(object_key(item));
    std::optional<json> old;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = items_.find(object_key(item));
      if (it != items_.end()) old = it->second;
    }
    if (!old) apply(item, Change::Added);
    else if ((*old)["metadata"].value("resourceVersion", "") != item["metadata"].value("resourceVersion", ""))
      apply(item, Change::Modified);
  }
  std::vector<json> vanished;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [k, v] : items_)
      if (!seen.count(k)) vanished.push_back(v);
  }
  for (const auto& v : vanished) apply(v, Change::Deleted);
  rv_ = r.body["metadata"].value("resourceVersion", std::string());
  relists_++;
  synced_ = true;
  return true;
}

void Informer::run() {
  bool need_list = true;
  int failures = 0;
  auto pause = [&](double s) {
    for (double t = 0; t < s && !stop_; t += 0.05) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
  while (!stop_) {
    if (need_list) {
      if (!relist()) {
        pause(std::min(5.0, 0.2 * (1 << std::min(failures++, 5))));
        continue;
      }
      need_list = false;
      failures = 0;
    }
    ListOptions o;
    o.label_selector = selector_;
    o.resource_version = rv_;
    drop_ = false;
    WatchEnd end = client_.watch(
        resource_, ns_, o, 240,
        [&](const json& ev) {
          const std::string type = ev.value("type", "");
          const json& obj = ev["object"];
          if (obj.contains("metadata") && obj["metadata"].contains("resourceVersion"))
            rv_ = obj["metadata"]["resourceVersion"].get<std::string>();
          if (type == "ADDED") apply(obj, Change::Added);
          else if (type == "MODIFIED") apply(obj, Change::Modified);
          else if (type == "DELETED") apply(obj, Change::Deleted);
          // BOOKMARK: only the resourceVersion moves.
          failures = 0;
        },
        [&] { return stop_.load() || drop_.load(); });
    if (stop_) break;
    watch_restarts_++;
    switch (end) {
      case WatchEnd::Gone:
        spdlog::info("informer {}: resourceVersion {} expired (410 Gone), relisting", resource(resource_).plural, rv_);
        need_list = true;
        break;
      case WatchEnd::Closed: break;  // server-side timeout: resume from rv_
      case WatchEnd::Stopped:        // dropped by drop_watch()
      case WatchEnd::Error:
        spdlog::warn("informer {}: watch connection lost, reconnecting", resource(resource_).plural);
        pause(std::min(5.0, 0.2 * (1 << std::min(failures++, 5))));
        // After repeated failures relist: the server may have lost our resourceVersion window.
        if (failures > 3) need_list = true;
        break;
    }
  }
}

}  // namespace ppu::op
