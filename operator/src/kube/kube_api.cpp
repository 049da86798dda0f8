#include "kube/kube_api.h"

namespace ppu::op {

std::string object_key(const json& obj) {
  const json& md = obj.at("metadata");
  return md.value("namespace", std::string()) + "/" + md.at("name").get<std::string>();
}

std::string Response::describe() const {
  if (status == 0) return "no response: " + error;
  std::string msg = error;
  if (msg.empty() && body.is_object()) msg = body.value("message", std::string());
  return "HTTP " + std::to_string(status) + (msg.empty() ? "" : ": " + msg);
}

Response KubeApi::update_with_retry(ResourceKind r, const std::string& ns, const std::string& name,
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
