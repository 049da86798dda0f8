// The PPUJob status's half of the machine-readable contract (python/ppu/contract.json): the
// shape of `status`, read from the same field lists the CRD's status schema is rendered from
// (reconcile/ppujob_status.h through field_schema.h), in core/contract_document.h's shape
// notation: {"type", "fields" | "values", "items"} plus each field's "doc".
#pragma once

#include <nlohmann/json.hpp>

namespace ppu::op::crd {

nlohmann::json status_contract();

}  // namespace ppu::op::crd
