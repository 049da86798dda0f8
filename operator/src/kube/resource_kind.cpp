#include "kube/resource_kind.h"

namespace ppu::op {

std::string ResourceInfo::api_version() const {
  const std::string g = group;
  return g.empty() ? version : g + "/" + version;
}

std::string ResourceInfo::path(const std::string& ns, const std::string& name, const std::string& sub) const {
  const std::string g = group;
  std::string p = g.empty() ? std::string("/api/") + version : "/apis/" + g + "/" + version;
  if (namespaced && !ns.empty()) p += "/namespaces/" + ns;
  p += std::string("/") + plural;
  if (!name.empty()) p += "/" + name;
  if (!sub.empty()) p += "/" + sub;
  return p;
}

}  // namespace ppu::op
