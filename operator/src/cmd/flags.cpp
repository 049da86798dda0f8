#include "cmd/flags.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>

namespace ppu::op {

namespace {

constexpr const char* kAbout =
    "ppu-operator: the PPUJob controller (turns PPUJobs into rank-assigned, self-healing pod gangs)";
constexpr size_t kNameColumn = 28;  // descriptions start after "  " + this many columns

// A CLI11 check from a function that returns "" or what is wrong with the value (CLI11 puts
// the flag's name in front: "--workers: '0' is not an integer in 1..256").
CLI::Validator rule(std::function<std::string(const std::string&)> problem) {
  return {[problem = std::move(problem)](std::string& v) { return problem(v); }, ""};
}

// Each read_* returns "" and sets `out`, or says what is wrong with `v`.
std::string read_duration(const std::string& v, double& out) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  const std::string unit = end ? std::string(end) : "";
  if (v.empty() || end == v.c_str() || x < 0) return "'" + v + "' is not a duration (e.g. 15s, 500ms, 2m)";
  if (unit.empty() || unit == "s") out = x;
  else if (unit == "ms") out = x / 1000;
  else if (unit == "m") out = x * 60;
  else if (unit == "h") out = x * 3600;
  else return "'" + v + "' has unknown unit '" + unit + "' (use ms, s, m or h)";
  return "";
}

std::string read_bool(const std::string& v, bool& out) {
  if (v == "true" || v == "1") out = true;
  else if (v == "false" || v == "0") out = false;
  else return "'" + v + "' is not true or false";
  return "";
}

std::string read_namespaces(const std::string& v, std::vector<std::string>& out) {
  out.clear();
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    std::string ns = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!ns.empty()) {
      // RFC 1123 label, as Kubernetes requires of namespace names.
      bool ok = ns.size() <= 63 && std::isalnum(static_cast<unsigned char>(ns.front())) &&
                std::isalnum(static_cast<unsigned char>(ns.back()));
      for (char c : ns) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
      if (!ok) return "'" + ns + "' is not a namespace name";
      out.push_back(ns);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return "";
}

// A value CLI11 has already checked with the same read_* function.
template <class T>
T checked(std::string (*read)(const std::string&, T&), const std::string& v) {
  T out{};
  read(v, out);
  return out;
}

// The values that Flags holds converted, as given; parse_flags() converts those that were.
struct Given {
  std::string network_policy, leader_elect, metrics_namespaces, scrape_interval, restart_backoff, restart_backoff_max,
      kueue, force_delete_on_lost_node;
};

// Every flag, its value's name (shown in the help) and its help text. Defaults are Flags' own.
// A repeated flag: the last one counts.
void declare(CLI::App& app, Flags& f, Given& g) {
  const Flags defaults;  // the help's "(default ...)" of the plain values
  app.set_help_flag();   // ours below, so that the help text is usage()'s
  app.allow_extras();    // unknown arguments are reported by parse_flags(), naming the first
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  const auto duration = rule([](const std::string& v) {
    double s = 0;
    return read_duration(v, s);
  });

  app.add_option("--kubeconfig", f.kubeconfig, "kubeconfig to use (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
      ->type_name("FILE");
  app.add_option("--namespace", f.ns, "watch only NS (default: all namespaces)")->type_name("NS");
  app.add_option("--metrics-addr", f.metrics_addr,
                 "Prometheus /metrics listen address (default " + defaults.metrics_addr + "; \"0\" = off)")
      ->type_name("ADDR");
  app.add_option("--metrics-auth", f.metrics_auth,
                 "none (default) or token: /metrics needs a bearer token that the API\n"
                 "server authenticates (TokenReview) and authorizes for `get` on the\n"
                 "non-resource URL /metrics (SubjectAccessReview)")
      ->type_name("MODE")
      ->check(rule([](const std::string& v) {
        return v == "none" || v == "token" ? std::string() : "'" + v + "' is not none or token";
      }));
  app.add_flag("--network-policy{true}", g.network_policy,
               "create a NetworkPolicy per PPUJob closing its ports to other pods\n"
               "(default true)")
      ->type_name("BOOL")
      ->check(rule([](const std::string& v) {
        bool b = false;
        return read_bool(v, b);
      }));
  app.add_flag("--kueue{true}", g.kueue,
               "queue PPUJobs labelled kueue.x-k8s.io/queue-name through Kueue: one\n"
               "Workload per job, no pod before admission (needs Kueue's CRDs;\n"
               "default false)")
      ->type_name("BOOL")
      ->check(rule([](const std::string& v) {
        bool b = false;
        return read_bool(v, b);
      }));
  app.add_flag("--force-delete-on-lost-node{true}", g.force_delete_on_lost_node,
               "watch Nodes (get/list/watch); a live job's lost rank pod, or a\n"
               "restarting gang's old pod, stuck terminating on a NotReady,\n"
               "unreachable or deleted node is force-deleted once its grace\n"
               "period is over, so its replacement can be created (default true;\n"
               "false: such a pod is waited for)")
      ->type_name("BOOL")
      ->check(rule([](const std::string& v) {
        bool b = false;
        return read_bool(v, b);
      }));
  app.add_option("--metrics-namespaces", g.metrics_namespaces,
                 "comma-separated namespaces allowed to scrape rank metrics through\n"
                 "that policy (default: the operator's own namespace)")
      ->type_name("LIST")
      ->check(rule([](const std::string& v) {
        std::vector<std::string> ns;
        return read_namespaces(v, ns);
      }));
  app.add_option("--health-addr", f.health_addr,
                 "/healthz and /readyz listen address (default " + defaults.health_addr + "; \"0\" = off)")
      ->type_name("ADDR");
  app.add_flag("--leader-elect{true}", g.leader_elect,
               "hold a coordination.k8s.io Lease so only one replica reconciles")
      ->check(rule([](const std::string& v) {
        return v == "true" || v == "false" ? std::string() : "'" + v + "' is not true or false";
      }));
  app.add_option("--leader-elect-namespace", f.leader_elect_namespace,
                 "namespace of the Lease (default: the current namespace)")
      ->type_name("NS");
  app.add_option("--scrape-interval", g.scrape_interval, "how often rank /metrics are scraped (default 15s; 0 = off)")
      ->type_name("DUR")
      ->check(duration);
  app.add_option("--workers", f.workers, "concurrent reconciles (default " + std::to_string(defaults.workers) + ")")
      ->type_name("N")
      ->check(rule([](const std::string& v) {
        char* end = nullptr;
        const long n = std::strtol(v.c_str(), &end, 10);
        return v.empty() || *end != '\0' || n < 1 || n > 256 ? "'" + v + "' is not an integer in 1..256"
                                                             : std::string();
      }));
  app.add_option("--restart-backoff", g.restart_backoff,
                 "wait before the first gang restart, doubled each time (default 10s)")
      ->type_name("DUR")
      ->check(duration);
  app.add_option("--restart-backoff-max", g.restart_backoff_max, "cap of the gang-restart back-off (default 5m)")
      ->type_name("DUR")
      ->check(duration);
  app.add_option("--log-level", f.log_level, "trace|debug|info|warn|error (default " + defaults.log_level + ")")
      ->type_name("LEVEL");
  app.add_flag("-h,--help", f.help, "this text");
}

}  // namespace

std::string usage() {
  Flags f;
  Given g;
  CLI::App app{kAbout, "ppu-operator"};
  declare(app, f, g);
  std::string out = std::string(kAbout) + "\n\nUsage: ppu-operator [flags]\n";
  for (const CLI::Option* o : app.get_options()) {
    std::string head = "--" + o->get_lnames().front();
    if (!o->get_type_name().empty()) head += " " + o->get_type_name();
    head.resize(std::max(head.size() + 1, kNameColumn), ' ');
    const std::string indent(2 + kNameColumn, ' ');
    std::string text = o->get_description();
    for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', nl + 1))
      text.insert(nl + 1, indent);
    out += "  " + head + text + "\n";
  }
  return out;
}

double parse_duration(const std::string& flag, const std::string& value) {
  double s = 0;
  const std::string problem = read_duration(value, s);
  if (!problem.empty()) throw FlagError(flag + ": " + problem);
  return s;
}

Flags parse_flags(const std::vector<std::string>& args) {
  Flags f;
  Given g;
  CLI::App app{kAbout, "ppu-operator"};
  declare(app, f, g);
  // CLI11 takes the arguments last first. "--flag=" gives a flag that takes a value an empty one
  // (CLI11 would read it as no value at all, so it gets "--flag" and ""), and is an error for an
  // on/off flag (CLI11 would read it as "on").
  std::vector<std::string> reversed;
  for (auto a = args.rbegin(); a != args.rend(); ++a) {
    const std::string name = a->substr(0, a->size() - 1);
    const CLI::Option* o =
        a->size() > 3 && a->rfind("--", 0) == 0 && a->back() == '=' ? app.get_option_no_throw(name) : nullptr;
    if (!o) {
      reversed.push_back(*a);
    } else if (o->get_items_expected_max() == 0) {
      throw FlagError(name + ": '' is not true or false");
    } else {
      reversed.emplace_back();
      reversed.push_back(name);
    }
  }
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw FlagError(e.what());
  }
  if (!app.remaining().empty()) throw FlagError("unknown flag '" + app.remaining().front() + "' (see --help)");
  // CLI11 has checked every value given.
  if (app.count("--network-policy")) f.network_policy = checked(read_bool, g.network_policy);
  if (app.count("--leader-elect")) f.leader_elect = g.leader_elect == "true";
  if (app.count("--kueue")) f.kueue = checked(read_bool, g.kueue);
  if (app.count("--force-delete-on-lost-node"))
    f.force_delete_on_lost_node = checked(read_bool, g.force_delete_on_lost_node);
  if (app.count("--metrics-namespaces")) f.metrics_namespaces = checked(read_namespaces, g.metrics_namespaces);
  if (app.count("--scrape-interval")) f.scrape_interval_s = checked(read_duration, g.scrape_interval);
  if (app.count("--restart-backoff")) f.restart_backoff_s = checked(read_duration, g.restart_backoff);
  if (app.count("--restart-backoff-max")) f.restart_backoff_max_s = checked(read_duration, g.restart_backoff_max);
  return f;
}

}  // namespace ppu::op
