// The runtime's half of the machine-readable contract (python/ppu/contract.json, written by the
// operator's ppu-contract together with the PPUJob status): what a program in another language
// needs to talk to ppu-train, ppu-launch and their files without spelling any of it by hand.
// Every value is read from its one C++ definition:
//   exit_codes    job_contract.h's codes by name, the notice codes, and on_exit's decision for
//                 every code under each recovery policy
//   env, binaries the environment a rank reads and the image's binaries
//   files         checkpoint_names.h's names and printf formats, the per-rank summary file
//                 (run_summary.h) and the termination log
//   summary       the run summary's fields (run_summary.h): type, whether optional, doc, and the
//                 fields of each object, the element of each array, the value of each map
//   choices       every choice-valued config key's names (config_choices.h), in table order
//   metrics       every rank metric (job_contract.h's PPU_RANK_METRICS) by its constant's
//                 name in snake_case (kFlopsExecuted: flops_executed -> "ppu_flops_executed_total")
// A shape is {"type": integer|number|string|boolean|object|array} plus, for an object,
// "fields" (name -> shape; absent: any keys) or "values" (a map: any key -> this shape), and for
// an array "items" (its element's shape).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace ppu {

nlohmann::json runtime_contract();

// The shape (as above) of a JSON value written from C++: the example's own types, an array's
// first element as its items; an object whose only key is "*" is a map of that key's shape.
nlohmann::json shape_of(const nlohmann::json& example);

// A metric constant's key in the contract: "kFlopsExecuted" -> "flops_executed".
std::string metric_key(const std::string& constant);

}  // namespace ppu
