// Kubernetes timestamps (metav1.Time): RFC 3339 UTC with second precision, "2026-01-02T03:04:05Z".
// Times inside the operator are whole seconds since the Unix epoch so that reconcile stays pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ppu::op {

// Unix seconds `t` as "2026-11-23T13:00:00Z".
std::string format_rfc3339(int64_t t);
// Microsecond form used by coordination.k8s.io Lease times (metav1.MicroTime).
std::string format_rfc3339_micro(double t);
// Accepts "...Z" with optional fractional seconds; nullopt when the text is not a timestamp.
std::optional<int64_t> parse_rfc3339(const std::string& s);
int64_t now_seconds();
double now_seconds_precise();

}  // namespace ppu::op
