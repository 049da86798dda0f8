#include "kube_api.h"

#include <stdexcept>

namespace ppu::op {

namespace resources {
const Resource pods{"", "v1", "pods"};
const Resource services{"", "v1", "services"};
const Resource configmaps{"", "v1", "configmaps"};
const Resource events{"", "v1", "events"};
const Resource leases{"coordination.k8s.io", "v1", "leases"};
const Resource ppujobs{"ppu.dev", "v1alpha1", "ppujobs"};
const Resource networkpolicies{"networking.k8s.io", "v1", "networkpolicies"};
const Resource jobs{"batch", "v1", "jobs"};
const Resource tokenreviews{"authentication.k8s.io", "v1", "tokenreviews", false};
const Resource subjectaccessreviews{"authorization.k8s.io", "v1", "subjectaccessreviews", false};
const Resource& by_plural(const std::string& p) {
  for (const Resource* r : {&pods, &services, &configmaps, &events, &leases, &ppujobs, &networkpolicies, &jobs})
    if (r->plural == p) return *r;
  throw std::invalid_argument("unknown resource '" + p + "'");
}
}  // namespace resources

std::string Resource::path(const std::string& ns, const std::string& name, const std::string& sub) const {
  std::string p = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) p += "/namespaces/" + ns;
  p += "/" + plural;
  if (!name.empty()) p += "/" + name;
  if (!sub.empty()) p += "/" + sub;
  return p;
}

std::string Response::describe() const {
  if (status == 0) return "no response: " + error;
  std::string msg = error;
  if (msg.empty() && body.is_object()) msg = body.value("message", std::string());
  return "HTTP " + std::to_string(status) + (msg.empty() ? "" : ": " + msg);
}

Response KubeApi::update_with_retry(const Resource& r, const std::string& ns, const std::string& name,
                                    const std::function<bool(json&)>& mutate, const std::string& sub, int attempts) {
  Response last;
  for (int i = 0; i < attempts; ++i) {
    Response cur = get(r, ns, name);
    if (!cur.ok()) return cur;
    json obj = cur.body;
    if (!mutate(obj)) return cur;
    last = replace(r, ns, name, obj, sub);
    if (last.status != 409) return last;
  }
  return last;
}

}  // namespace ppu::op
