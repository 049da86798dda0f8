// Command-line flags of ppu-operator, parsed with CLI11 (as the runtime's binaries are).
// parse_flags() throws FlagError whose message names the offending flag (main exits 2);
// --help sets `help` (the caller prints usage(), the help text of the declared flags).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace ppu::op {

class FlagError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Flags {
  std::string kubeconfig;
  std::string ns;  // empty = all namespaces
  std::string metrics_addr = ":8080";
  std::string metrics_auth = "none";            // none | token (TokenReview + SubjectAccessReview)
  bool network_policy = true;                   // a NetworkPolicy per PPUJob
  bool kueue = false;                           // Kueue Workloads for queued PPUJobs
  bool force_delete_on_lost_node = true;        // watch Nodes; force-delete live ranks stuck on lost ones
  std::vector<std::string> metrics_namespaces;  // empty: the operator's own namespace
  std::string health_addr = ":8081";
  bool leader_elect = false;
  std::string leader_elect_namespace;  // default: the kubeconfig / pod namespace
  double scrape_interval_s = 15;
  int workers = 4;
  double restart_backoff_s = 10;
  double restart_backoff_max_s = 300;
  std::string log_level = "info";
  bool help = false;
};

Flags parse_flags(const std::vector<std::string>& args);
std::string usage();
// "15s", "500ms", "2m", "1.5" (seconds) → seconds; throws FlagError naming `flag`.
double parse_duration(const std::string& flag, const std::string& value);

}  // namespace ppu::op
