// ppu-operator-load: N PPUJobs × K ranks against a real kube-apiserver (started here), served by
// the real ppu-operator binary. Prints one JSON object: seconds from the first create until all
// N*K pods exist, until every job reports activeRanks == K, the operator's RSS (current and
// peak, from /proc), and the p50/p99 reconcile latency read from the operator's own histogram
// (ppu_operator_reconcile_duration_seconds on its /metrics, interpolated inside the bucket as
// Prometheus' histogram_quantile does). A measurement tool, not a test: it asserts nothing about time.
//
// Usage: ppu-operator-load [--jobs 100] [--ranks 32] [--workers 4]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kube/kube_client.h"
#include "kube_test_env.h"

using namespace ppu::op;

namespace {
long proc_kb(pid_t pid, const std::string& field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

// Cumulative buckets (upper bound, count) of an unlabelled histogram in Prometheus' text format.
std::vector<std::pair<double, double>> histogram_buckets(const std::string& text, const std::string& name) {
  std::vector<std::pair<double, double>> out;
  std::istringstream in(text);
  std::string line;
  const std::string prefix = name + "_bucket{le=\"";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    size_t end = line.find('"', prefix.size());
    std::string le = line.substr(prefix.size(), end - prefix.size());
    double bound = le == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(le);
    out.emplace_back(bound, std::stod(line.substr(line.rfind(' ') + 1)));
  }
  return out;
}

// histogram_quantile's rule: linear inside the bucket holding rank q*count; the +Inf bucket
// answers with the largest finite bound. -1 when the histogram is empty.
double histogram_quantile(double q, const std::vector<std::pair<double, double>>& b) {
  if (b.empty() || b.back().second <= 0) return -1;
  const double rank = q * b.back().second;
  double lower = 0, below = 0;
  for (const auto& [bound, count] : b) {
    if (count >= rank) {
      if (std::isinf(bound)) return lower;
      return lower + (bound - lower) * (count > below ? (rank - below) / (count - below) : 1.0);
    }
    lower = bound;
    below = count;
  }
  return lower;
}
}  // namespace

int main(int argc, char** argv) {
  int jobs = 100, ranks = 32, workers = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--jobs") jobs = std::stoi(argv[i + 1]);
    else if (a == "--ranks") ranks = std::stoi(argv[i + 1]);
    else if (a == "--workers") workers = std::stoi(argv[i + 1]);
    else {
      std::cerr << "ppu-operator-load: unknown flag '" << a << "'\n";
      return 2;
    }
  }
  testing::KubeTestEnv env;
  KubeClient client(load_kubeconfig(env.kubeconfig()));
  const int metrics_port = testing::free_port();
  testing::Process op = testing::spawn(
      {PPU_OPERATOR_BIN, "--kubeconfig", env.kubeconfig(), "--namespace", "default", "--workers",
       std::to_string(workers), "--metrics-addr", "127.0.0.1:" + std::to_string(metrics_port), "--health-addr",
       "127.0.0.1:" + std::to_string(testing::free_port()), "--scrape-interval", "0", "--log-level", "warn"},
      env.dir() + "/operator.log");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  long rss_idle = proc_kb(op.pid, "VmRSS");

  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  for (int j = 0; j < jobs; ++j) {
    json m = {{"apiVersion", "ppu.dev/v1alpha1"},
              {"kind", "PPUJob"},
              {"metadata", {{"name", "load-" + std::to_string(j)}, {"namespace", "default"}}},
              {"spec",
               {{"replicas", ranks},
                {"image", "ppu:test"},
                {"training", {{"model", {{"preset", "tiny"}}}, {"slicing", {{"mode", "mlp"}, {"slices", 4}}}}}}}};
    Response r = client.create(ResourceKind::PPUJob, "default", m);
    if (!r.ok()) {
      std::cerr << "create job " << j << ": " << r.describe() << "\n";
      return 1;
    }
  }
  double t_created = std::chrono::duration<double>(Clock::now() - t0).count();
  const size_t want = static_cast<size_t>(jobs) * ranks;
  double t_pods = -1, t_status = -1;
  long rss_peak_seen = 0;
  while (std::chrono::duration<double>(Clock::now() - t0).count() < 1800) {
    rss_peak_seen = std::max(rss_peak_seen, proc_kb(op.pid, "VmRSS"));
    ListOptions o;
    o.label_selector = "ppu.dev/job";
    Response p = client.list_all(ResourceKind::Pod, "default", o);
    if (t_pods < 0 && p.ok() && p.body["items"].size() == want)
      t_pods = std::chrono::duration<double>(Clock::now() - t0).count();
    if (t_pods >= 0) {
      Response js = client.list_all(ResourceKind::PPUJob, "default");
      int done = 0;
      for (const auto& j : js.body["items"])
        if (j.contains("status") && j["status"].value("activeRanks", 0) == ranks) ++done;
      if (done == jobs) {
        t_status = std::chrono::duration<double>(Clock::now() - t0).count();
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  long rss = proc_kb(op.pid, "VmRSS"), hwm = proc_kb(op.pid, "VmHWM");
  std::string metrics;
  KubeClient::http_get_text("http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics", 5, metrics);
  const auto buckets = histogram_buckets(metrics, "ppu_operator_reconcile_duration_seconds");
  int rc = op.terminate();
  json out = {{"jobs", jobs},
              {"ranks_per_job", ranks},
              {"pods", want},
              {"operator_workers", workers},
              {"seconds_to_create_jobs", t_created},
              {"seconds_to_all_pods", t_pods},
              {"seconds_to_all_status_active", t_status},
              {"operator_rss_idle_kib", rss_idle},
              {"operator_rss_end_kib", rss},
              {"operator_rss_peak_kib", std::max(hwm, rss_peak_seen)},
              {"reconcile_passes", buckets.empty() ? 0.0 : buckets.back().second},
              {"reconcile_p50_seconds", histogram_quantile(0.50, buckets)},
              {"reconcile_p99_seconds", histogram_quantile(0.99, buckets)},
              {"operator_exit_code_on_sigterm", rc}};
  std::cout << out.dump(2) << "\n";
  return t_pods < 0 ? 1 : 0;
}
