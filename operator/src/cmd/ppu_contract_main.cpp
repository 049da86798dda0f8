// ppu-contract: writes or checks python/ppu/contract.json, the contract every Python test, bench
// and script reads through the package python/ppu: the runtime's half (core/contract_document.h:
// exit codes and restart decisions, environment, file names, the run summary's fields, choice
// names, every rank metric), the PPUJob status's shape (crd/status_contract.h) and the operator's
// metrics (metrics/metric_names.h).
//   ppu-contract --write <source root>   rewrite it
//   ppu-contract --check <source root>   exit 1 when it differs from the rendering
// A development tool: not installed; run by `ninja generate-schema`, scripts/verify.sh and the
// ctest operator.contract_file.
#include "core/contract_document.h"
#include "core/rendered_files.h"
#include "crd/status_contract.h"
#include "metrics/metric_names.h"

int main(int argc, char** argv) {
  return ppu::rendered_files_main(argc, argv, "ppu-contract", "python/ppu/contract.json", [] {
    nlohmann::json contract = {
        {"generated_by",
         "ppu-contract (operator/src/cmd/ppu_contract_main.cpp) from the C++ definitions; do not edit"}};
    contract.update(ppu::runtime_contract());
    contract["status"] = ppu::op::crd::status_contract();
#define PPU_CONTRACT_OPERATOR_METRIC(constant, name) contract["metrics"]["operator"][ppu::metric_key(#constant)] = name;
    PPU_OPERATOR_METRICS(PPU_CONTRACT_OPERATOR_METRIC)
#undef PPU_CONTRACT_OPERATOR_METRIC
    return std::vector<ppu::RenderedFile>{{"python/ppu/contract.json", contract.dump(2) + "\n"}};
  });
}
