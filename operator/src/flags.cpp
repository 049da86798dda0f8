#include "flags.h"

#include <cstdlib>

namespace ppu::op {

std::string usage() {
  return R"(ppu-operator: the PPUJob controller (turns PPUJobs into rank-assigned, self-healing pod gangs)

Usage: ppu-operator [flags]
  --kubeconfig FILE           kubeconfig to use (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  --namespace NS              watch only NS (default: all namespaces)
  --metrics-addr ADDR         Prometheus /metrics listen address (default :8080; "0" = off)
  --health-addr ADDR          /healthz and /readyz listen address (default :8081; "0" = off)
  --leader-elect              hold a coordination.k8s.io Lease so only one replica reconciles
  --leader-elect-namespace NS namespace of the Lease (default: the current namespace)
  --scrape-interval DUR       how often rank /metrics are scraped (default 15s; 0 = off)
  --workers N                 concurrent reconciles (default 4)
  --restart-backoff DUR       wait before the first gang restart, doubled each time (default 10s)
  --restart-backoff-max DUR   cap of the gang-restart back-off (default 5m)
  --log-level LEVEL           trace|debug|info|warn|error (default info)
  --help                      this text
)";
}

double parse_duration(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  std::string unit = end ? std::string(end) : "";
  if (v.empty() || end == v.c_str() || x < 0)
    throw FlagError(flag + ": '" + v + "' is not a duration (e.g. 15s, 500ms, 2m)");
  if (unit.empty() || unit == "s") return x;
  if (unit == "ms") return x / 1000;
  if (unit == "m") return x * 60;
  if (unit == "h") return x * 3600;
  throw FlagError(flag + ": '" + v + "' has unknown unit '" + unit + "' (use ms, s, m or h)");
}

Flags parse_flags(const std::vector<std::string>& args) {
  Flags f;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    bool has_value = false;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    auto need = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= args.size()) throw FlagError(a + ": missing value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") f.help = true;
    else if (a == "--kubeconfig") f.kubeconfig = need();
    else if (a == "--namespace") f.ns = need();
    else if (a == "--metrics-addr") f.metrics_addr = need();
    else if (a == "--health-addr") f.health_addr = need();
    else if (a == "--leader-elect") {
      if (has_value) {
        if (value != "true" && value != "false") throw FlagError("--leader-elect: '" + value + "' is not true or false");
        f.leader_elect = value == "true";
      } else {
        f.leader_elect = true;
      }
    } else if (a == "--leader-elect-namespace") f.leader_elect_namespace = need();
    else if (a == "--scrape-interval") f.scrape_interval_s = parse_duration(a, need());
    else if (a == "--restart-backoff") f.restart_backoff_s = parse_duration(a, need());
    else if (a == "--restart-backoff-max") f.restart_backoff_max_s = parse_duration(a, need());
    else if (a == "--log-level") f.log_level = need();
    else if (a == "--workers") {
      std::string v = need();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 256) throw FlagError("--workers: '" + v + "' is not an integer in 1..256");
      f.workers = static_cast<int>(n);
    } else {
      throw FlagError("unknown flag '" + args[i] + "' (see --help)");
    }
  }
  return f;
}

}  // namespace ppu::op
