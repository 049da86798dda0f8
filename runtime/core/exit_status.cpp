#include "core/exit_status.h"

#include "core/job_contract.h"

namespace ppu {

ExitStatus exit_status_of(const std::exception& e) {
  namespace code = contract::exit_code;
  const std::string what = e.what();
  if (dynamic_cast<const ConfigError*>(&e)) return {code::kConfigError, "configuration error: " + what};
  // CLI11 validators and std::stoi & co. throw it for a malformed flag or value.
  if (dynamic_cast<const std::invalid_argument*>(&e)) return {code::kConfigError, "invalid argument: " + what};
  if (dynamic_cast<const PeerFailure*>(&e)) return {code::kPeerFailure, "peer failure: " + what};
  if (dynamic_cast<const OutOfGroup*>(&e)) return {code::kRejoin, "out of the live group: " + what};
  if (dynamic_cast<const Retired*>(&e)) return {code::kDone, contract::kRetiredMessagePrefix + what};
  if (const auto* notice = dynamic_cast<const LeftOnNotice*>(&e))
    return {contract::left_on_notice(notice->signal()), "left on notice: " + what};
  if (const auto* input = dynamic_cast<const UnusableInput*>(&e))
    return {code::kDataError, std::string(input->subject()) + " error: " + what};
  return {code::kRuntimeFailure, "error: " + what};
}

int usage_exit_code(int parser_code) {
  return parser_code == 0 ? contract::exit_code::kDone : contract::exit_code::kConfigError;
}

}  // namespace ppu
