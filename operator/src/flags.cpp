#include "flags.h"

#include <cctype>
#include <cstdlib>

namespace ppu::op {

std::string usage() {
  return R"(ppu-operator: the PPUJob controller (turns PPUJobs into rank-assigned, self-healing pod gangs)

Usage: ppu-operator [flags]
  --kubeconfig FILE           kubeconfig to use (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  --namespace NS              watch only NS (default: all namespaces)
  --metrics-addr ADDR         Prometheus /metrics listen address (default :8080; "0" = off)
  --metrics-auth MODE         none (default) or token: /metrics needs a bearer token that the API
                              server authenticates (TokenReview) and authorizes for `get` on the
                              non-resource URL /metrics (SubjectAccessReview)
  --network-policy BOOL       create a NetworkPolicy per PPUJob closing its ports to other pods
                              (default true)
  --metrics-namespaces LIST   comma-separated namespaces allowed to scrape rank metrics through
                              that policy (default: the operator's own namespace)
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

namespace {
bool parse_bool(const std::string& flag, const std::string& v) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  throw FlagError(flag + ": '" + v + "' is not true or false");
}

std::vector<std::string> parse_namespaces(const std::string& flag, const std::string& v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    std::string ns = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!ns.empty()) {
      // RFC 1123 label, as Kubernetes requires of namespace names.
      bool ok = ns.size() <= 63 && std::isalnum(static_cast<unsigned char>(ns.front())) &&
                std::isalnum(static_cast<unsigned char>(ns.back()));
      for (char c : ns) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
      if (!ok) throw FlagError(flag + ": '" + ns + "' is not a namespace name");
      out.push_back(ns);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}
}  // namespace

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
    else if (a == "--metrics-auth") {
      f.metrics_auth = need();
      if (f.metrics_auth != "none" && f.metrics_auth != "token")
        throw FlagError("--metrics-auth: '" + f.metrics_auth + "' is not none or token");
    } else if (a == "--network-policy") f.network_policy = has_value ? parse_bool(a, value) : true;
    else if (a == "--metrics-namespaces") f.metrics_namespaces = parse_namespaces(a, need());
    else if (a == "--leader-elect") {
      if (has_value) {
        if (value != "true" && value != "false")
          throw FlagError("--leader-elect: '" + value + "' is not true or false");
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
      if (v.empty() || *end != '\0' || n < 1 || n > 256)
        throw FlagError("--workers: '" + v + "' is not an integer in 1..256");
      f.workers = static_cast<int>(n);
    } else {
      throw FlagError("unknown flag '" + args[i] + "' (see --help)");
    }
  }
  return f;
}

}  // namespace ppu::op
