#include "kube/fake_kube.h"

#include <chrono>
#include <sstream>

namespace ppu::op::testing {

namespace {

std::string plural(ResourceKind kind) { return resource(kind).plural; }

Response status_response(long code, const std::string& reason, const std::string& message) {
  Response r;
  r.status = code;
  if (code == 0) {
    r.error = message;
    return r;
  }
  r.body = {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
            {"reason", reason}, {"code", code},       {"message", message}};
  r.error = message;
  return r;
}

Response ok(long code, json body) {
  Response r;
  r.status = code;
  r.body = std::move(body);
  return r;
}

std::string ns_of(const json& obj) { return obj["metadata"].value("namespace", std::string()); }

}  // namespace

bool matches_selector(const json& obj, const std::string& selector) {
  if (selector.empty()) return true;
  const json labels = obj["metadata"].value("labels", json::object());
  std::stringstream ss(selector);
  std::string term;
  while (std::getline(ss, term, ',')) {
    const auto eq = term.find('=');
    const std::string k = term.substr(0, eq);
    if (!labels.contains(k)) return false;
    if (eq != std::string::npos && labels[k].get<std::string>() != term.substr(eq + 1)) return false;
  }
  return true;
}

void FakeKube::fail(const std::string& verb, ResourceKind kind, long status, int times, const std::string& reason) {
  std::lock_guard<std::mutex> l(mu_);
  failures_.push_back(Failure{verb, kind, reason, status, times});
}

void FakeKube::clear_failures() {
  std::lock_guard<std::mutex> l(mu_);
  failures_.clear();
}

std::optional<Response> FakeKube::injected(const std::string& verb, ResourceKind kind, const std::string& ns,
                                           const std::string& name) {
  // mu_ held by the caller.
  calls_.push_back(verb + " " + plural(kind) + "/" + ns + "/" + name);
  for (auto it = failures_.begin(); it != failures_.end(); ++it) {
    if (it->verb != verb || it->kind != kind) continue;
    Response resp = status_response(it->status, it->reason, "injected " + verb + " failure");
    if (it->times > 0 && --it->times == 0) failures_.erase(it);
    return resp;
  }
  return std::nullopt;
}

json FakeKube::store(ResourceKind kind, json obj, const std::string& type) {
  json& md = obj["metadata"];
  md["resourceVersion"] = std::to_string(++rv_);
  if (!md.contains("uid")) md["uid"] = "uid-" + std::to_string(++uid_);
  obj["kind"] = resource(kind).kind;
  obj["apiVersion"] = resource(kind).api_version();
  objects_[plural(kind)][key(ns_of(obj), md["name"].get<std::string>())] = obj;
  events_.push_back(Event{rv_, plural(kind), type, obj});
  cv_.notify_all();
  return obj;
}

json FakeKube::put(ResourceKind kind, json obj) {
  std::lock_guard<std::mutex> l(mu_);
  const std::string k = key(ns_of(obj), obj["metadata"]["name"].get<std::string>());
  const bool exists = objects_[plural(kind)].count(k) > 0;
  if (exists && !obj["metadata"].contains("uid")) obj["metadata"]["uid"] = objects_[plural(kind)][k]["metadata"]["uid"];
  return store(kind, std::move(obj), exists ? "MODIFIED" : "ADDED");
}

std::optional<json> FakeKube::peek(ResourceKind kind, const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  auto pit = objects_.find(plural(kind));
  if (pit == objects_.end()) return std::nullopt;
  auto it = pit->second.find(key(ns, name));
  if (it == pit->second.end()) return std::nullopt;
  return it->second;
}

std::vector<json> FakeKube::objects(ResourceKind kind, const std::string& ns) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<json> out;
  auto pit = objects_.find(plural(kind));
  if (pit == objects_.end()) return out;
  for (const auto& [k, v] : pit->second)
    if (ns.empty() || ns_of(v) == ns) out.push_back(v);
  return out;
}

void FakeKube::compact() {
  std::lock_guard<std::mutex> l(mu_);
  compacted_ = rv_;
  events_.clear();
  cv_.notify_all();
}

void FakeKube::pause_watches(bool paused) {
  std::lock_guard<std::mutex> l(mu_);
  paused_ = paused;
  cv_.notify_all();
}

void FakeKube::close_watches() {
  std::lock_guard<std::mutex> l(mu_);
  ++closes_;
  cv_.notify_all();
}

std::vector<std::string> FakeKube::calls() const {
  std::lock_guard<std::mutex> l(mu_);
  return calls_;
}

int FakeKube::count_calls(const std::string& prefix) const {
  std::lock_guard<std::mutex> l(mu_);
  int n = 0;
  for (const auto& c : calls_)
    if (c.compare(0, prefix.size(), prefix) == 0) ++n;
  return n;
}

int64_t FakeKube::resource_version() const {
  std::lock_guard<std::mutex> l(mu_);
  return rv_;
}

Response FakeKube::get(ResourceKind kind, const std::string& ns, const std::string& name) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto f = injected("get", kind, ns, name)) return *f;
  auto& objs = objects_[plural(kind)];
  auto it = objs.find(key(ns, name));
  if (it == objs.end()) return status_response(404, "NotFound", plural(kind) + " \"" + name + "\" not found");
  return ok(200, it->second);
}

Response FakeKube::list_all(ResourceKind kind, const std::string& ns, const ListOptions& o) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto f = injected("list", kind, ns, "")) return *f;
  json items = json::array();
  for (const auto& [k, v] : objects_[plural(kind)]) {
    if (!ns.empty() && ns_of(v) != ns) continue;
    if (!matches_selector(v, o.label_selector)) continue;
    json item = v;
    item.erase("kind");
    item.erase("apiVersion");
    items.push_back(std::move(item));
  }
  return ok(200, {{"kind", std::string(resource(kind).kind) + "List"},
                  {"apiVersion", resource(kind).api_version()},
                  {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                  {"items", std::move(items)}});
}

Response FakeKube::create(ResourceKind kind, const std::string& ns, const json& in) {
  std::lock_guard<std::mutex> l(mu_);
  json obj = in;
  json& md = obj["metadata"];
  if (!md.contains("name") && md.contains("generateName"))
    md["name"] = md["generateName"].get<std::string>() + std::to_string(++generated_);
  const std::string name = md.value("name", std::string());
  if (auto f = injected("create", kind, ns, name)) return *f;
  if (resource(kind).namespaced) md["namespace"] = ns;
  if (objects_[plural(kind)].count(key(ns, name)))
    return status_response(409, "AlreadyExists", plural(kind) + " \"" + name + "\" already exists");
  md.erase("uid");
  md.erase("resourceVersion");
  return ok(201, store(kind, std::move(obj), "ADDED"));
}

Response FakeKube::replace(ResourceKind kind, const std::string& ns, const std::string& name, const json& in,
                           const std::string& sub) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto f = injected("replace", kind, ns, name)) return *f;
  auto& objs = objects_[plural(kind)];
  auto it = objs.find(key(ns, name));
  if (it == objs.end()) return status_response(404, "NotFound", plural(kind) + " \"" + name + "\" not found");
  const std::string want = in["metadata"].value("resourceVersion", std::string());
  if (!want.empty() && want != it->second["metadata"].value("resourceVersion", std::string()))
    return status_response(409, "Conflict",
                           "the object has been modified; please apply your changes to the latest version");
  json obj = it->second;
  if (sub == "status") {
    obj["status"] = in.value("status", json::object());
  } else {
    json keep_status = obj.value("status", json());
    json keep_uid = obj["metadata"]["uid"];
    obj = in;
    obj["metadata"]["uid"] = keep_uid;
    obj["metadata"]["namespace"] = ns;
    if (!keep_status.is_null()) obj["status"] = keep_status;
    else obj.erase("status");
  }
  return ok(200, store(kind, std::move(obj), "MODIFIED"));
}

Response FakeKube::merge_patch(ResourceKind kind, const std::string& ns, const std::string& name, const json& patch,
                               const std::string&) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto f = injected("patch", kind, ns, name)) return *f;
  auto& objs = objects_[plural(kind)];
  auto it = objs.find(key(ns, name));
  if (it == objs.end()) return status_response(404, "NotFound", plural(kind) + " \"" + name + "\" not found");
  json obj = it->second;
  obj.merge_patch(patch);
  return ok(200, store(kind, std::move(obj), "MODIFIED"));
}

Response FakeKube::remove(ResourceKind kind, const std::string& ns, const std::string& name, const std::string&,
                          const std::string& uid, int64_t grace_period_s) {
  std::lock_guard<std::mutex> l(mu_);
  if (auto f = injected("delete", kind, ns, name)) return *f;
  if (grace_period_s >= 0) calls_.back() += " grace=" + std::to_string(grace_period_s);
  auto& objs = objects_[plural(kind)];
  auto it = objs.find(key(ns, name));
  if (it == objs.end()) return status_response(404, "NotFound", plural(kind) + " \"" + name + "\" not found");
  if (!uid.empty() && it->second["metadata"].value("uid", std::string()) != uid)
    return status_response(409, "Conflict", "Precondition failed: UID in precondition: " + uid);
  json gone = it->second;
  objs.erase(it);
  gone["metadata"]["resourceVersion"] = std::to_string(++rv_);
  events_.push_back(Event{rv_, plural(kind), "DELETED", gone});
  cv_.notify_all();
  return ok(200, {{"kind", "Status"}, {"status", "Success"}});
}

WatchEnd FakeKube::watch(ResourceKind kind, const std::string& ns, const ListOptions& o, int timeout_s,
                         const std::function<void(const json&)>& on_event, const std::function<bool()>& should_stop) {
  int64_t cursor = 0;
  uint64_t closes = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto f = injected("watch", kind, ns, "")) return f->status == 410 ? WatchEnd::Gone : WatchEnd::Error;
    cursor = o.resource_version.empty() ? rv_ : std::stoll(o.resource_version);
    closes = closes_;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (true) {
    if (should_stop()) return WatchEnd::Stopped;
    std::vector<json> batch;
    {
      std::unique_lock<std::mutex> l(mu_);
      if (closes_ != closes) return WatchEnd::Closed;
      if (cursor < compacted_) return WatchEnd::Gone;
      if (!paused_) {
        for (const auto& e : events_) {
          if (e.rv <= cursor || e.plural != plural(kind)) continue;
          cursor = e.rv;
          if (!ns.empty() && ns_of(e.object) != ns) continue;
          if (!matches_selector(e.object, o.label_selector)) continue;
          batch.push_back({{"type", e.type}, {"object", e.object}});
        }
      }
      if (batch.empty()) {
        if (std::chrono::steady_clock::now() >= until) return WatchEnd::Closed;
        cv_.wait_for(l, std::chrono::milliseconds(10));
        continue;
      }
    }
    for (const auto& ev : batch) on_event(ev);
  }
}

}  // namespace ppu::op::testing
