// MetricsScraper: every interval, GETs http://<podIP>:<metricsPort>/metrics of each running rank
// of each job the controller caches, aggregates the samples per job (metrics/job_metrics.h),
// exports the per-job gauges and hands outer round / perplexity (and, with recovery live, the
// live group's size and slice coverage) to the controller for status.
// Ranks that do not answer are skipped; scraping never blocks reconciling (its own thread).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "controller/controller.h"
#include "metrics/operator_metrics.h"

namespace ppu::op {

class MetricsScraper {
 public:
  MetricsScraper(Controller& c, OperatorMetrics& m, double interval_s, double timeout_s = 2.0)
      : controller_(c), metrics_(m), interval_(interval_s), timeout_(timeout_s) {}
  ~MetricsScraper() { stop(); }
  void start();
  void stop();
  void scrape_once();

 private:
  Controller& controller_;
  OperatorMetrics& metrics_;
  double interval_, timeout_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace ppu::op
