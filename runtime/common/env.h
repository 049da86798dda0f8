// Environment variables the runtime reads (names: core/job_contract.h). An unset or empty
// variable means "use the fallback"; a set one that does not parse is an error naming it.
#pragma once

#include <string>

namespace ppu {

// The variable's value, or `fallback` when unset or empty.
std::string env_string(const char* name, const std::string& fallback);

// An integer variable, or `fallback` when unset or empty; throws std::invalid_argument naming
// the variable and its value when it is set but not an integer within int's range.
int env_int(const char* name, int fallback);

}  // namespace ppu
