#include "controller/metrics_scraper.h"

#include <chrono>

#include "kube/kube_client.h"
#include "kube/kube_words.h"
#include "metrics/prom_text.h"
#include "reconcile/job_spec.h"
#include "reconcile/job_status.h"
#include "reconcile/ppujob_status.h"

namespace ppu::op {

void MetricsScraper::start() {
  stop_ = false;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      l.unlock();
      scrape_once();
      l.lock();
      cv_.wait_for(l, std::chrono::duration<double>(interval_), [this] { return stop_; });
    }
  });
}

void MetricsScraper::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MetricsScraper::scrape_once() {
  for (const auto& job : controller_.jobs()) {
    const PPUJobStatus st = status_of(job);
    if (st.phase != JobPhase::Running) continue;
    JobSpec spec = parse_job(job);
    std::vector<std::vector<Sample>> per_rank;
    for (const auto& pod : controller_.pods_of(spec.ns, spec.name)) {
      if (pod_phase(pod) != pod_phase_name::kRunning || !pod_rank(pod))
        continue;  // ranks only, not the rendezvous store
      std::string ip = pod["status"].value("podIP", std::string());
      if (ip.empty()) continue;
      if (ip.find(':') != std::string::npos) ip = "[" + ip + "]";
      std::string text;
      Response r = KubeClient::http_get_text("http://" + ip + ":" + std::to_string(spec.metrics_port) + "/metrics",
                                             timeout_, text);
      if (r.status == 200) per_rank.push_back(parse_prometheus_text(text));
    }
    if (per_rank.empty()) continue;
    JobMetrics m = aggregate_job_metrics(per_rank);
    metrics_.set_job(spec.ns, spec.name, m, static_cast<int>(st.ready_ranks.value_or(0)), spec.replicas,
                     static_cast<int>(st.restart_count.value_or(0)), static_cast<int>(st.recoveries.value_or(0)));
    ScrapedProgress p;
    p.outer_round = m.outer_round;
    p.eval_perplexity = m.eval_perplexity;
    p.checkpoint_round = m.checkpoint_round;
    p.step = m.step;
    p.steps_target = m.steps_target;
    p.remaining_seconds = m.remaining_seconds;
    p.live_ranks = m.live_ranks;
    p.min_slice_coverage = m.min_slice_coverage;
    p.stops = m.stops;
    p.rounds_lost = m.rounds_lost;
    p.last_stop_round = m.last_stop_round;
    p.last_stop_resumed_round = m.last_stop_resumed_round;
    controller_.set_progress(spec.ns + "/" + spec.name, p);
  }
}

}  // namespace ppu::op
