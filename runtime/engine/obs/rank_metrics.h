// RankMetrics: this rank's Prometheus endpoint (/metrics on `port`) with the series listed in
// docs/METRICS.md, kept in a prometheus-cpp registry. Port 0 disables the endpoint; updates are
// then no-ops. The endpoint is served by cpp-httplib, not prometheus-cpp's civetweb Exposer:
// Debian's civetweb fails to start ("null context when constructing CivetServer") in any
// process that links LibTorch, while cpp-httplib works there (both measured on bookworm).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <thread>

namespace httplib {
class Server;
}
namespace prometheus {
class Registry;
class Gauge;
class Counter;
}  // namespace prometheus

namespace ppu {

struct StateBytes {
  double weights = 0, gradients = 0, inner_optimizer = 0, outer_optimizer = 0, offloaded = 0;
  double total() const { return weights + gradients + inner_optimizer + outer_optimizer + offloaded; }
};

class RankMetrics {
 public:
  RankMetrics(int port, const std::map<std::string, std::string>& labels);
  ~RankMetrics();
  bool enabled() const { return server_ != nullptr; }

  void set_state(const StateBytes& measured, const StateBytes& full_training);
  void set_memory(double rss_bytes, double cuda_allocated, double cuda_reserved, double cuda_peak);
  void add_step(double flops_executed, double flops_full, double tokens);
  // `remaining_seconds`: to the last step at this rank's measured rate.
  void set_progress(double step, double steps_target, double remaining_seconds, double loss, double tokens_per_second,
                    double outer_round);
  void set_eval(double loss, double floor_perplexity);
  // One sync of `fragment` ("gradients" for DDP): bytes sent and received by this rank, wall
  // seconds in the sync and, of those, seconds blocked waiting for the exchange.
  void add_sync(const std::string& fragment, double bytes_sent, double bytes_received, double seconds,
                double wait_seconds);
  void set_checkpoint_round(double round);
  // The job's stops of the whole job over its life, the rounds they lost, and its last stop: the
  // round it had reached and the one the next run resumed from (-1, -1: none; core/interruptions.h).
  // All four are -1 until the run has read the job's history (never without checkpoint.dir).
  void set_job_stops(double stops, double rounds_lost, double last_stop_round, double last_stop_resumed_round);
  // Live recovery (network.recovery=live); a gang run reports K and 1 and never counts.
  void set_live(double live_ranks, double min_slice_coverage);
  void add_degraded_round();
  // `ranks` ranks held another θ than the others before a sync (each repaired).
  void add_theta_mismatches(int ranks);
  void add_checkpoint_failure();
  // A re-formation that took `seconds`: after losing ranks (`lost`, counted) or to take a
  // replacement back (time only).
  void add_recovery(bool lost, double seconds);
  // A fault of `kind` (killed, stopped, hung, unreachable, lost, preempted, store) and the seconds
  // from its detection until the group had re-formed (0 when none was needed).
  void add_fault(const std::string& kind, double seconds_to_recover);
  // Quorum sync (outer.sync_mode quorum): a sync point passed, closed by "all" or "grace" (or
  // "sat_out": this rank sat it out, outer.quorum_sit_out), after
  // `wait_seconds` waiting there; the grace window now.
  void add_sync_point(const std::string& closed, double wait_seconds, double grace_seconds);
  // An inner step skipped to reach a closed sync point.
  void add_skipped_step();
  // An outer step this rank's delta entered with a weight below 1 (it skipped steps).
  void add_short_contribution();
  // A fragment this rank rejoined after sitting out its outer steps: its work "merged" or "dropped".
  void add_late_work(const std::string& outcome);

 private:
  struct Families;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<std::thread> serving_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
};

// Resident set size of this process, from /proc/self/statm.
double process_rss_bytes();

}  // namespace ppu
