#include "engine/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "common/notice.h"
#include "common/termination_message.h"
#include "core/cost_model.h"
#include "core/slice_plan.h"
#include "core/streaming_schedule.h"
#include "core/wire_plan.h"
#include "data/data_loader.h"
#include "data/dataset_dir.h"
#include "data/token_shard.h"
#include "engine/comm/collectives.h"
#include "engine/comm/gradient_allreduce.h"
#include "engine/comm/heartbeat.h"
#include "engine/comm/live_group.h"
#include "engine/comm/live_store_keys.h"
#include "engine/comm/store_clients.h"
#include "engine/cpu/compute_threads.h"
#include "engine/fault_hooks.h"
#include "engine/model/kernel_settings.h"
#include "engine/model/transformer.h"
#include "engine/obs/device_memory.h"
#include "engine/obs/rank_metrics.h"
#include "engine/obs/step_phases.h"
#include "engine/obs/step_profiler.h"
#include "engine/optim/inner_optimizer.h"
#include "engine/optim/outer_optimizer.h"
#include "engine/run_dataset.h"
#include "engine/state/checkpoint_location.h"
#include "engine/state/host_store.h"
#include "engine/train/checkpoints.h"
#include "engine/train/live_recovery.h"
#include "engine/train/notice_departure.h"
#include "engine/train/outer_syncs.h"
#include "engine/train/progress.h"
#include "engine/train/quorum_sync.h"
#include "engine/train/summary.h"
#include "engine/train/theta_guard.h"
#include "objstore/s3_url.h"

namespace ppu {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<bool> decay_mask(const InnerConfig& inner, const std::vector<ParamInfo>& layout) {
  std::vector<bool> mask;
  mask.reserve(layout.size());
  for (const auto& p : layout) mask.push_back(applies_weight_decay(inner, p.role));
  return mask;
}

std::string duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%ldh%02ldm%02lds", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

// This rank's training thread has made no progress for its window (comm/progress_clock.h): it
// has stopped beating, so its peers fence it; the process ends so that its supervisor replaces
// it (under recovery live it alone: exit 5; under gang the gang: exit 3). From the heartbeat's
// thread, while the training thread is stuck.
[[noreturn]] void stop_hung_rank(double idle_s, double window_s, bool live, bool writing, double write_bound_s) {
  const std::string what =
      writing ? fmt::format(
                    "this rank's checkpoint write has gone on past checkpoint.write_timeout_s = {} s: its storage "
                    "hangs, and it leaves the group to be replaced; the previous checkpoint stays the resume point",
                    write_bound_s)
              : fmt::format(
                    "this rank's training thread has made no progress for {:.1f} s (window {:.1f} s, "
                    "network.progress_timeout_s): it is hung, and leaves the group to be replaced",
                    idle_s, window_s);
  const auto status = live ? exit_status_of(OutOfGroup(what)) : exit_status_of(PeerError(what));
  spdlog::error("{}", status.message);
  write_termination_message(status.message);
  spdlog::default_logger()->flush();
  std::_Exit(status.code);
}

// One rank's run, as Algorithm 1 reads: inner steps (inner_step), the streaming outer sync of
// fragments (outer_sync), the end of a round (end_of_round). The concerns around it are rooms of
// their own, given the parts they use by reference: the outer syncs in flight
// (train/outer_syncs.h), the θ guard before each sync (train/theta_guard.h), live recovery
// (train/live_recovery.h), what a notice does at a round boundary (train/notice_departure.h),
// quorum sync (train/quorum_sync.h), the run's checkpoints (train/checkpoints.h) and its summary
// (train/summary.h); DDP's gradient all-reduce is comm/gradient_allreduce.h, the device and
// kernel settings model/kernel_settings.h. RunProgress (where the run is, its totals) is the
// Run's, shared with the rooms.
class Run {
 public:
  // The initialiser list reads only the config and the environment; the parts that are built
  // from other parts are built in the body, in the order written there (the rendezvous first,
  // the heartbeat on it), and declared in that order, so that they are destroyed in reverse.
  Run(const Config& c, const RunEnv& env)
      : config_(c),
        env_(env),
        ddp_(c.method == Method::Ddp),
        live_(c.network.recovery == Recovery::Live && env.rendezvous.world_size > 1),
        wire_(wire_plan(c)),
        device_(rank_device(c, env.rendezvous.rank)),
        plan_(SlicePlan::from_config(c, env.rendezvous.world_size, env.rendezvous.rank)),
        schedule_(c, c.model) {
    // The heartbeat's threads first: they keep this priority, and everything after them (Gloo's
    // threads included) yields to them. They beat once the rendezvous is behind (start()), and a
    // replacement only once the group took it in (LiveRecovery::rejoin).
    heartbeat_.emplace(
        env.rendezvous, std::chrono::milliseconds(static_cast<int64_t>(c.network.heartbeat_s * 1000)),
        [this](const Heartbeat::Lost& lost) { on_heartbeat_lost(lost, live_, fault_, *collectives_); },
        live_keys::kHeartbeatPrefix, live_, /*start_now=*/false);
    if (env.rendezvous.world_size > 1 && c.network.heartbeat_s > 0) yield_cpu_to_control_plane(kComputeNice);
    collectives_.emplace(env.rendezvous, std::chrono::milliseconds(static_cast<int64_t>(c.network.timeout_s * 1000)),
                         nccl_group_device(device_, env.rendezvous.world_size, live_));
    if (!collectives_->joining()) heartbeat_->start();
    dataset_.emplace(load_dataset(c));
    loader_.emplace(
        *dataset_, env.rendezvous.rank, env.rendezvous.world_size, c.train.seed, c.inner.batch_size, c.model.seq_len,
        c.data.sampling == DataSampling::Contiguous ? data::RankSampling::Contiguous : data::RankSampling::Iid);
    model_.emplace(c.model, plan_, c.train.seed, device_,
                   c.train.dtype == Dtype::Bf16 ? torch::kBFloat16 : torch::kFloat32);
    inner_.emplace(c.inner, c.train.steps, model_->trainable(), decay_mask(c.inner, model_->layout()),
                   model_->masters());
    outer_.emplace(c.outer, *model_, schedule_, *collectives_, c.network.collective);
    metrics_.emplace(env.metrics_port, std::map<std::string, std::string>{{"rank", std::to_string(env.rendezvous.rank)},
                                                                          {"run_id", env.run_id},
                                                                          {"method", method_name(c.method)}});
    flops_ = step_flops(c.model, c.inner.batch_size, c.model.seq_len, plan_);
    profiler_.emplace(c.train.profile_dir, c.train.profile_first_step, c.train.profile_steps, env.rendezvous.rank,
                      device_);
    faults_.emplace(env.rendezvous.rank, collectives_->joining());
    collectives_->set_before_reform([this](int64_t generation) { faults_->before_forming(generation); });
    // Progress, not liveness: a hung training thread stops this rank's heartbeat.
    if (c.network.progress_timeout_s > 0) collectives_->progress().set_window(c.network.progress_timeout_s);
    heartbeat_->watch_progress(collectives_->progress(), [this](double idle_s) {
      const auto& progress = collectives_->progress();
      stop_hung_rank(idle_s, progress.window(), live_, progress.past_bound(), config_.checkpoint.write_timeout_s);
    });
    const RunParts parts{*inner_, *outer_, *loader_, *metrics_, progress_, recovery_};
    if (!env.checkpoint_dir.empty()) {
      checkpoints_.emplace(c, env.checkpoint_dir, *collectives_, plan_, schedule_, *model_, parts);
      checkpoints_->set_before_write([this] { faults_->before_checkpoint_write(progress_.step); });
    }
    if (live_) {
      prepare_live_recovery(c, env.rendezvous, *collectives_);
      live_recovery_.emplace(c, env.rendezvous.rank, *collectives_, *heartbeat_, plan_, parts, fault_,
                             checkpoints_ ? &checkpoints_->store() : nullptr);
    }
    theta_guard_.emplace(*collectives_, schedule_, parts, live_recovery());
    notices_.emplace(c, env.rendezvous.rank, plan_, *collectives_, progress_, live_recovery(),
                     checkpoints_ ? &*checkpoints_ : nullptr);
    syncs_.emplace(c, schedule_, parts, live_recovery());
    if (!ddp_ && c.outer.sync_mode == SyncMode::Quorum)
      quorum_.emplace(c, schedule_, *collectives_, parts, live_recovery(),
                      [this](int64_t step) { return whole_group_at(step); });
    if (quorum_ && c.effective_sit_out() > 0) notices_->count_away_with([this] { return quorum_->away_with_notice(); });
    recovery_.policy = choice_name(c.network.recovery);
    metrics_->set_live(collectives_->world_size(), 1);
    set_model_kernels(*model_, c, device_);
  }

  RunSummary run() {
    if (collectives_->joining()) {
      // A replacement: it takes the live group's state where the members admit it (a round
      // boundary or a fragment's sync point), then does what the members do there after taking
      // it in (at a boundary the vote and the checkpoint; evaluation).
      if (!live_recovery_->rejoin()) return live_recovery_->finished_without_this_rank();
      if (at_round_boundary()) after_admissions();
      evaluate_if_due();
    } else if (checkpoints_) {
      checkpoints_->resume();
    }
    // From here a notice (SIGTERM, SIGINT) is acted on at the next round boundary (end_of_round).
    const NoticeScope notices;
    const auto start = Clock::now();
    const int64_t first = progress_.step;
    if (quorum_) quorum_->start(first, collectives_->joining());
    double loss = 0;
    for (int64_t t = progress_.step; t < config_.train.steps; ++t) {
      // Quorum sync: a rank behind a sync point that closed skips its steps up to it.
      const bool trains = !quorum_ || !quorum_->skips(t);
      if (trains) {
        faults_->before_step(t, [this] { outer_->global().front().view({-1})[0].add_(1.0); });
        const auto step_start = Clock::now();
        model_->begin_step(t);
        profiler_->before_step(t);
        loss = inner_step(t);  // lines 7–10
        step_seconds_.push_back(std::chrono::duration<double>(Clock::now() - step_start).count());
        profiler_->after_step(t);
      }
      made_progress();
      if (quorum_) quorum_->stepped(trains);
      progress_.step = t + 1;
      if (!ddp_) {
        syncs_->finish_due();
        const auto due = schedule_.due(progress_.step);
        const bool last = progress_.step == config_.train.steps;
        if (quorum_ && (!due.empty() || last)) quorum_->meet(progress_.step);
        if (!sitting_out())
          for (int f : due) outer_sync(f);  // lines 11–14
        if (last) finish_training();
        else if (!due.empty() && !at_round_boundary()) between_boundaries();
      }
      if (at_round_boundary() || progress_.step == config_.train.steps) end_of_round();
      report(loss, start, first);
      evaluate_if_due();
    }
    // Training time excludes evaluation (done on the global θ, once per run, not per rank).
    if (checkpoints_) checkpoints_->finish();  // the last rounds' background uploads
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    const double seconds = wall - eval_seconds_;
    const double eval = evaluate();
    auto result = summary(loss, eval, seconds, progress_.step > first ? seconds / (progress_.step - first) : 0);
    if (live_recovery_) live_recovery_->finish(result);  // for late replacements
    heartbeat_->leave();  // the last collective is behind: peers may finish after this rank exits
    return result;
  }

 private:
  // X ~ D_k; g on I_train only (partial backward); InnerOpt on the trainable slices.
  double inner_step(int64_t t) {
    phases_.start();
    const auto tokens = to_tensor(loader_->next()).to(device_);
    phases_.lap(StepPhases::kBatch);
    auto loss = model_->loss(tokens);
    phases_.lap(StepPhases::kForward);
    loss.backward();
    grad_bytes_ = 0;
    for (const auto& p : model_->trainable())
      if (p.grad().defined()) grad_bytes_ += p.grad().nbytes();
    phases_.lap(StepPhases::kBackward);
    if (ddp_) average_gradients();
    phases_.lap(StepPhases::kAllreduce);
    lr_ = inner_->step(t);
    phases_.lap(StepPhases::kOptimizer);
    progress_.tokens += static_cast<double>(tokens.size(0)) * (tokens.size(1) - 1);
    progress_.flops += flops_.executed();
    progress_.flops_full += flops_.full();
    metrics_->add_step(flops_.executed(), flops_.full(), static_cast<double>(tokens.size(0)) * (tokens.size(1) - 1));
    return loss.item<double>();
  }

  // DDP: the full gradient averaged over the ranks (comm/gradient_allreduce.h). The step waits
  // for the whole exchange: all of it is network wait.
  void average_gradients() {
    const AllreduceStats wire =
        allreduce_gradients(*collectives_, model_->trainable(), wire_, env_.rendezvous.world_size);
    progress_.bytes_sent += wire.bytes_sent;
    progress_.bytes_received += wire.bytes_received;
    progress_.sync_seconds += wire.seconds;
    progress_.network_wait_seconds += wire.seconds;
    metrics_->add_sync("gradients", wire.bytes_sent, wire.bytes_received, wire.seconds, wire.seconds);
  }

  // Lines 11–14 for fragment f, on a θ the group has agreed on (the θ guard).
  void outer_sync(int fragment) {
    if (quorum_) quorum_->weigh(fragment);
    theta_guard_->check(fragment);
    syncs_->start(fragment);
  }

  // After the last step. Exchanges still in flight were scheduled: they complete with their
  // outer step. A fragment whose schedule has no sync at the last step never gets an outer step
  // there; with outer.final_sync = average its trailing local progress is folded into θ by one
  // plain count-normalised average (no momentum), with none θ stays at its last sync.
  void finish_training() {
    syncs_->drain();
    if (config_.outer.final_sync != FinalSync::Average) return;
    for (int f : schedule_.unsynced_at_end(config_.train.steps)) {
      if (quorum_) quorum_->weigh(f);
      theta_guard_->check(f);
      syncs_->average(f);
    }
  }

  bool at_round_boundary() const { return progress_.step % config_.outer.sync_every == 0; }

  // Quorum sync's sitting out (outer.quorum_sit_out): this rank sat out the last sync point, so
  // it takes no part in the group's collectives until its next.
  bool sitting_out() const { return quorum_ && quorum_->sitting_out(); }

  // Whether the whole group must meet at the sync point after inner step `step` (no rank sits
  // it out): a checkpoint is written at it, or an evaluation comes before the next one.
  bool whole_group_at(int64_t step) const {
    const int64_t every = config_.outer.sync_every;
    if (checkpoints_ && step % every == 0 && (step / every) % config_.checkpoint.every_rounds == 0) return true;
    const int64_t eval = config_.train.eval_every;
    if (eval <= 0) return false;
    const int64_t next_eval = (step + eval - 1) / eval * eval;  // the first evaluation at or after it
    if (next_eval >= config_.train.steps) return false;
    for (int64_t s = step + 1; s <= next_eval; ++s)
      if (!schedule_.due(s).empty()) return false;  // another sync point comes first
    return true;
  }

  // A fragment's sync point inside a round: live recovery takes replacements back here too, so
  // that one does not wait for the boundary (under quorum sync the members may hold different
  // positions between boundaries: only there).
  void between_boundaries() {
    if (live_recovery_ && !quorum_) live_recovery_->admit_joiners();
  }

  void end_of_round() {
    ++progress_.rounds;
    if (live_recovery_) live_recovery_->round_end();
    if (!sitting_out()) after_admissions();  // a rank sitting out acts on a notice at its next boundary in
  }

  // The rest of a round boundary, which the members and the replacements they have just taken
  // in go through together.
  // A notice (SIGTERM, SIGINT) is acted on here (train/notice_departure.h): when the whole job
  // goes, this round's checkpoint is written first, due or not.
  void after_admissions() {
    const BoundaryVote vote = notices_->vote();
    const Departure departure = notices_->departure_of(vote);
    checkpoint_if_due(vote.upload_room, departure == Departure::Job);
    if (departure == Departure::Job && quorum_) quorum_->job_stops();  // for the ranks sitting out
    if (departure != Departure::None) notices_->depart(vote, departure);
    if (live_recovery_) {
      live_recovery_->resize(vote.desired);  // an elastic job: its slots above the desired size retire
      live_recovery_->bound_degraded(vote.degraded_s);
    }
  }

  // A checkpoint holds every job rank's state; a degraded group writes one too (RunCheckpoints).
  // `now`: whether or not one is due (the job stops on a notice).
  // Background uploads (checkpoint.upload): a round finished uploading becomes the resume point
  // at the next boundary; a job stopping on a notice waits for this round's. `upload_room`: the
  // boundary vote's answer, whether every member can take another round now.
  void checkpoint_if_due(bool upload_room, bool now = false) {
    if (!checkpoints_) return;
    checkpoints_->collect_uploads();
    checkpoints_->note_reached();
    if (!now && progress_.rounds % config_.checkpoint.every_rounds != 0) return;
    syncs_->drain();
    // The last round's and a notice's checkpoint is never skipped for an upload still going.
    const bool must = now || progress_.step == config_.train.steps;
    until_one_generation_completes([&] {
      checkpoints_->save(must, upload_room);
      return true;
    });
    if (now) checkpoints_->finish();
  }

  // Held-out loss of the global θ (the model the method yields at this point: each fragment
  // as of its last outer step; DDP's parameters are global). The eval batches are split over
  // the ranks (rank r takes batches r, r + K, ...) and the per-batch sums are gathered and
  // added in rank order, so every rank reports the same number and the job does the work
  // once. On the host the view reads the global tensors in place.
  double evaluate() {
    const auto start = Clock::now();
    torch::NoGradGuard no_grad;
    const Transformer global(config_.model, global_params(), device_);
    const double loss = until_one_generation_completes([&] {
      // The group's ranks share the batches (after a loss, the survivors all of them).
      const int rank = collectives_->rank(), stride = collectives_->world_size();
      const double mine =
          eval_loss_sum(global, *dataset_, config_, rank, stride, device_, [this] { collectives_->progress().tick(); });
      double total = 0;
      for (const auto& part : collectives_->allgather(torch::tensor({mine}, torch::kFloat64)))
        total += part.item<double>();
      return total / config_.train.eval_batches;
    });
    const int rank = collectives_->rank(), stride = collectives_->world_size();  // of the evaluation that counted
    eval_batches_done_ += rank < config_.train.eval_batches ? (config_.train.eval_batches - 1 - rank) / stride + 1 : 0;
    metrics_->set_eval(loss, floor_perplexity(*dataset_));
    eval_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    return loss;
  }

  // A step done: tick the progress clock and, with network.progress_timeout_s = 0, derive the
  // window from the measured steps: 20 median steps, at least 2 heartbeat windows (not watched
  // until a few steps are measured: start-up, data loading and the first steps are slower).
  void made_progress() {
    auto& progress = collectives_->progress();
    progress.tick();
    if (config_.network.progress_timeout_s > 0 || step_seconds_.size() < kWarmupSteps + 3) return;
    if (step_seconds_.size() % 10 != 3 && std::isfinite(progress.window())) return;                 // every 10 steps
    const std::size_t from = step_seconds_.size() > 50 ? step_seconds_.size() - 50 : kWarmupSteps;  // the last 50
    progress.set_window(std::max(2 * config_.network.heartbeat_s, 20 * median_after(step_seconds_, from)));
  }

  // Median wall time of one inner step (lines 7–10: batch, forward, backward, optimiser) after
  // this process's first two steps; outer syncs, evaluation and logging are not in it. Benches
  // compare it with other implementations of the same step.
  double steady_inner_step_seconds() const { return median_after(step_seconds_, kWarmupSteps); }

  // The global parameters in fp32: the outer optimiser's θ; DDP's are the local ones (in bf16
  // their fp32 masters, every parameter being trainable).
  std::vector<torch::Tensor> global_params() const {
    if (!ddp_) return outer_->global();
    return model_->fp32_weights();
  }

  // The group's collectives, through live recovery when there is one (train/live_recovery.h).
  template <class F>
  auto until_one_generation_completes(F&& work) -> decltype(work()) {
    return ppu::until_one_generation_completes(live_recovery(), work);
  }

  LiveRecovery* live_recovery() { return live_recovery_ ? &*live_recovery_ : nullptr; }

  void report(double loss, Clock::time_point start, int64_t first) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count() - eval_seconds_;
    const auto done = static_cast<double>(progress_.step - first);
    const double tps = elapsed > 0 ? done * config_.inner.batch_size * config_.model.seq_len / elapsed : 0;
    const double eta = done > 0 ? elapsed / done * static_cast<double>(config_.train.steps - progress_.step) : 0;
    metrics_->set_progress(progress_.step, config_.train.steps, eta, loss, tps, progress_.rounds);
    const StateBytes state = measured_state(*model_, *inner_, ddp_ ? nullptr : &*outer_, grad_bytes_);
    metrics_->set_state(state, full_training_state(state, *model_, plan_, grad_bytes_));
    const auto cuda = cuda_memory(device_.is_cuda() ? device_.index() : -1);
    metrics_->set_memory(process_rss_bytes(), cuda.allocated, cuda.reserved, cuda.peak);
    if (progress_.step % config_.train.log_every == 0 || progress_.step == config_.train.steps) {
      spdlog::info("step {}/{} loss {:.4f} ppl {:.2f} lr {:.2e} tok/s {:.0f} round {} eta {}", progress_.step,
                   config_.train.steps, loss, std::exp(loss), lr_, tps, progress_.rounds, duration(eta));
    }
  }

  void evaluate_if_due() {
    if (config_.train.eval_every > 0 && progress_.step % config_.train.eval_every == 0 &&
        progress_.step < config_.train.steps) {
      const double eval = evaluate();
      const double floor = floor_perplexity(*dataset_);
      spdlog::info("eval step {} loss {:.4f} ppl {:.3f}{} of the global parameters", progress_.step, eval,
                   std::exp(eval), floor > 0 ? fmt::format(" (floor {:.3f})", floor) : "");
    }
  }

  RunSummary summary(double loss, double eval, double seconds, double step_seconds) {
    RunEnd end;
    end.global = global_params();  // DDP has no outer state: its local parameters are the global ones
    end.param_checksum = parameter_checksum(end.global);
    end.final_loss = loss;
    end.eval_loss = eval;
    end.seconds = seconds;
    end.step_seconds = step_seconds;
    end.eval_seconds = eval_seconds_;
    end.eval_batches_evaluated = eval_batches_done_;
    end.grad_bytes = grad_bytes_;
    end.inner_step_seconds_median = steady_inner_step_seconds();
    end.inner_step_phases_median = phases_.medians(kWarmupSteps);
    if (heartbeat_) recovery_.store_requests.heartbeat = heartbeat_->requests();
    if (live_recovery_) recovery_.store_requests.group = live_recovery_->store_requests();
    const SummarySources run{config_,       env_.rendezvous, device_, ddp_,    plan_,     *dataset_,
                             *collectives_, *model_,         *inner_, *outer_, progress_, recovery_};
    RunSummary result = summarise(run, end, env_.final_params);
    if (quorum_) result.outer_sync = quorum_->summary();
    if (checkpoints_) result.checkpoint_writes = checkpoints_->summary();
    return result;
  }

  const Config& config_;
  RunEnv env_;
  bool ddp_;
  bool live_;      // network.recovery=live with more than one rank
  WirePlan wire_;  // the wire dtype ppu-plan reports too: bf16 runs send bf16
  torch::Device device_;
  SlicePlan plan_;
  StreamingSchedule schedule_;
  RunProgress progress_;
  RecoverySummary recovery_;
  PendingFault fault_;  // noted by the heartbeat's thread too: outlives it
  // The parts, in the order the constructor builds them.
  std::optional<Collectives> collectives_;
  std::optional<Heartbeat> heartbeat_;  // before the rendezvous, started after it: every peer is up then
  std::optional<data::TokenDataset> dataset_;
  std::optional<data::RankLoader> loader_;
  std::optional<Transformer> model_;
  std::optional<InnerOptimizer> inner_;
  std::optional<OuterOptimizer> outer_;
  std::optional<RankMetrics> metrics_;
  StepFlops flops_;
  std::optional<StepProfiler> profiler_;       // train.profile_dir: a trace of a few inner steps
  std::optional<FaultHooks> faults_;           // PPU_TEST_FAULT: tests place faults at steps
  std::optional<RunCheckpoints> checkpoints_;  // a checkpoint directory is set
  std::optional<LiveRecovery> live_recovery_;  // network.recovery=live
  std::optional<ThetaGuard> theta_guard_;      // before every outer sync
  std::optional<NoticeDeparture> notices_;     // at every round boundary
  std::optional<OuterSyncs> syncs_;            // the outer syncs, in flight or not
  std::optional<QuorumSync> quorum_;           // outer.sync_mode=quorum
  double lr_ = 0;
  double eval_seconds_ = 0;        // all evaluations of this process: not training time
  int64_t eval_batches_done_ = 0;  // eval batches this rank computed (its share of each evaluation)
  int64_t grad_bytes_ = 0;
  std::vector<double> step_seconds_;
  StepPhases phases_;                             // the same steps as step_seconds_, phase by phase
  static constexpr std::size_t kWarmupSteps = 2;  // left out of the medians
};

}  // namespace

void check_runnable(const Config& config, const RunEnv& env) {
  // A single process runs solo as one rank of the config's K (see SlicePlan::from_config).
  validate_config(config, env.rendezvous.world_size == 1 ? config.ranks : env.rendezvous.world_size);
  SlicePlan::from_config(config, env.rendezvous.world_size, env.rendezvous.rank);  // RANK within WORLD_SIZE
  if (config.train.device == Device::Cuda && !torch::cuda::is_available())
    throw ConfigError(
        "config key 'train.device' is 'cuda' but this build or machine has no CUDA device "
        "(torch::cuda::is_available() is false)");
  if (config.train.dtype == Dtype::Bf16 && config.train.device == Device::Cpu &&
      !at::matmul(torch::ones({2, 2}, torch::kBFloat16), torch::ones({2, 2}, torch::kBFloat16))
           .equal(torch::full({2, 2}, 2.0, torch::kBFloat16)))
    throw ConfigError("config key 'train.dtype' is 'bf16' but this LibTorch cannot multiply bf16 matrices on the CPU");
  const HostStore host_state(config.outer.host_state_dir);  // throws if it names no writable directory
  // An s3:// checkpoint location: its credentials and bucket are checked here, before any
  // rendezvous or training (ConfigError naming what to fix).
  if (S3Url::is_s3(env.checkpoint_dir))
    CheckpointLocation::checked(env.checkpoint_dir, "checkpoint.dir", S3Service::of(config.checkpoint));
  const auto& d = config.data;
  if (d.source == DataSource::Shards || !d.path.empty()) {
    // The shards' contents are verified when a rank loads them (load_dataset).
    const data::DatasetMeta meta = data::TokenDataset::check(d.path);
    data::TokenDataset::check_vocab(d.path, meta.vocab, config.model.vocab);
  }
}

RunSummary train(const Config& config, const RunEnv& env) {
  check_runnable(config, env);
  const bool live = config.network.recovery == Recovery::Live && env.rendezvous.world_size > 1;
  if (live) keep_ranks_alive_when_the_store_dies();  // the store may die and restart under the job
  try {
    Run run(config, env);
    return run.run();
  } catch (const LiveRecoveryGaveUp& e) {
    // The coverage rules: gang restart from the last checkpoint (exit 3). Without a checkpoint
    // directory that restart would train from step 0 again: the job ends here, saying so.
    if (env.checkpoint_dir.empty())
      throw ConfigError(std::string(e.what()) +
                        "; but the job has no checkpoint.dir, so a gang restart would train again from step 0: "
                        "it ends here instead (set checkpoint.dir to let live recovery fall back)");
    throw;
  } catch (const PeerError& e) {
    // Under live recovery a rank that lost the group (a blip, a store it could not reach, a
    // group it could not form) is replaced alone and rejoins; only the coverage rules restart
    // the gang.
    if (live) throw OutOfGroup(std::string("this rank lost the live group: ") + e.what());
    throw;
  }
}

}  // namespace ppu
