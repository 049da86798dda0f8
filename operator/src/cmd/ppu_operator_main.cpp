// ppu-operator: wires the controller, metrics, health endpoints and leader election together,
// and shuts down cleanly on SIGTERM/SIGINT (workers finish their current job, the lease is
// released so a standby takes over at once).
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <csignal>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "cmd/flags.h"
#include "controller/controller.h"
#include "controller/metrics_scraper.h"
#include "kube/kube_client.h"
#include "kube/kubeconfig.h"
#include "kube/leader_election.h"
#include "metrics/health_server.h"
#include "metrics/metrics_auth.h"
#include "metrics/metrics_server.h"
#include "metrics/operator_metrics.h"

using namespace ppu::op;

int main(int argc, char** argv) {
  Flags flags;
  try {
    flags = parse_flags(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const FlagError& e) {
    std::cerr << "ppu-operator: " << e.what() << "\n";
    return 2;
  }
  if (flags.help) {
    std::cout << usage();
    return 0;
  }
  auto level = spdlog::level::from_str(flags.log_level);
  if (level == spdlog::level::off && flags.log_level != "off") {
    std::cerr << "ppu-operator: --log-level: unknown level '" << flags.log_level << "'\n";
    return 2;
  }
  spdlog::set_level(level);

  // Signals are taken by one thread with sigwait; every other thread inherits the block.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  std::thread([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    spdlog::info("received signal {}, shutting down", sig);
    stop = true;
    cv.notify_all();
  }).detach();

  RestConfig rc;
  try {
    rc = resolve_config(flags.kubeconfig);
  } catch (const std::exception& e) {
    std::cerr << "ppu-operator: " << e.what() << "\n";
    return 2;
  }
  KubeClient client(rc);
  OperatorMetrics metrics;
  std::unique_ptr<MetricsAuthorizer> authorizer;
  std::unique_ptr<MetricsServer> metrics_server;
  std::unique_ptr<HealthServer> health;

  ControllerOptions copts;
  copts.ns = flags.ns;
  copts.workers = flags.workers;
  copts.reconcile.restart_backoff_s = flags.restart_backoff_s;
  copts.reconcile.restart_backoff_max_s = flags.restart_backoff_max_s;
  copts.reconcile.network_policy = flags.network_policy;
  copts.reconcile.kueue = flags.kueue;
  copts.reconcile.force_delete_on_lost_node = flags.force_delete_on_lost_node;
  copts.reconcile.metrics_namespaces =
      flags.metrics_namespaces.empty() ? std::vector<std::string>{rc.ns} : flags.metrics_namespaces;
  Controller controller(client, copts, &metrics);

  try {
    if (flags.metrics_addr != "0") {
      if (flags.metrics_auth == "token") authorizer = std::make_unique<MetricsAuthorizer>(client);
      metrics_server = std::make_unique<MetricsServer>(flags.metrics_addr, metrics.registry(), authorizer.get());
    }
  } catch (const std::exception& e) {
    std::cerr << "ppu-operator: " << e.what() << "\n";
    return 2;
  }
  try {
    if (flags.health_addr != "0")
      health = std::make_unique<HealthServer>(
          flags.health_addr, [&] { return !stop.load(); }, [&] { return !stop.load() && controller.synced(); });
  } catch (const std::exception& e) {
    std::cerr << "ppu-operator: " << e.what() << "\n";
    return 2;
  }

  spdlog::info("ppu-operator starting: server {} namespace {}, /metrics auth {}, NetworkPolicy per job {}", rc.server,
               flags.ns.empty() ? "(all)" : flags.ns, flags.metrics_auth, flags.network_policy ? "on" : "off");
  controller.start_informers();

  std::unique_ptr<LeaderElector> elector;
  std::atomic<bool> lost{false};
  if (flags.leader_elect) {
    LeaseOptions lo;
    lo.ns =
        !flags.leader_elect_namespace.empty() ? flags.leader_elect_namespace : (!flags.ns.empty() ? flags.ns : rc.ns);
    elector = std::make_unique<LeaderElector>(client, lo);
    if (!elector->acquire(stop)) {
      controller.stop();
      return 0;
    }
    elector->keep([&] {
      lost = true;
      stop = true;
      cv.notify_all();
    });
  }

  controller.start_workers(&stop);
  std::unique_ptr<MetricsScraper> scraper;
  if (flags.scrape_interval_s > 0) {
    scraper = std::make_unique<MetricsScraper>(controller, metrics, flags.scrape_interval_s);
    scraper->start();
  }
  spdlog::info("ppu-operator reconciling with {} workers", flags.workers);

  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return stop.load(); });
  }
  if (scraper) scraper->stop();
  controller.stop();
  if (elector) elector->release();
  spdlog::info("ppu-operator stopped");
  return lost ? 1 : 0;
}
