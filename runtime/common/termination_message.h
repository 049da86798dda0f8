// Kubernetes copies a container's termination-message file into its pod's status, where the
// operator reads it: a failure's reason in plain text, or a success's result as one line of
// JSON. write_termination_message writes `message` (plus a newline) to
// contract::kTerminationLog when that file exists (the kubelet creates it; outside a pod
// nothing is written) or to $PPU_TERMINATION_LOG when set (tests). Never throws.
#pragma once

#include <string>

namespace ppu {

void write_termination_message(const std::string& message);

}  // namespace ppu
