// typed_object: a new Kubernetes object of a given kind whose apiVersion and kind come from the
// resource table (kube/resource_kind.h), so that no builder spells them by hand. `fields` are
// the rest of the object (metadata, spec, data...).
#pragma once

#include <nlohmann/json.hpp>

#include "kube/resource_kind.h"

namespace ppu::op {

inline nlohmann::json typed_object(ResourceKind k, nlohmann::json fields = nlohmann::json::object()) {
  const ResourceInfo& r = resource(k);
  fields["apiVersion"] = r.api_version();
  fields["kind"] = r.kind;
  return fields;
}

}  // namespace ppu::op
