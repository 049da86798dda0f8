#include "engine/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <utility>

#include "common/atomic_file.h"
#include "common/env.h"
#include "common/fnv1a.h"
#include "common/termination_message.h"
#include "core/coowners.h"
#include "core/cost_model.h"
#include "core/job_contract.h"
#include "core/slice_plan.h"
#include "core/streaming_schedule.h"
#include "core/wire_plan.h"
#include "data/data_loader.h"
#include "data/dataset_dir.h"
#include "data/token_shard.h"
#include "engine/comm/collectives.h"
#include "engine/comm/delta_exchange.h"
#include "engine/comm/heartbeat.h"
#include "engine/comm/live_group.h"
#include "engine/comm/store_clients.h"
#include "engine/fault_hooks.h"
#include "engine/model/stand_in_part.h"
#include "engine/model/transformer.h"
#include "engine/obs/device_memory.h"
#include "engine/obs/rank_metrics.h"
#include "engine/obs/step_phases.h"
#include "engine/obs/step_profiler.h"
#include "engine/optim/inner_optimizer.h"
#include "engine/optim/outer_optimizer.h"
#include "engine/run_dataset.h"
#include "engine/state/checkpoint_format.h"
#include "engine/state/checkpoint_store.h"
#include "engine/state/host_store.h"

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

// train.device: cuda means this rank's GPU, LOCAL_RANK modulo the visible devices, so that
// several ranks may share one GPU (tests) and ppu-launch / torchrun ranks spread over a node's.
// train.deterministic: deterministic CUDA kernels (SDPA's backward accumulates without atomics)
// and a fixed cuBLAS workspace, set before the first cuBLAS handle exists, so that the same
// inputs give the same bits and a resumed run is bit-exact. CPU runs are deterministic anyway.
torch::Device rank_device(const Config& c, const RunEnv& env) {
  if (c.train.device != Device::Cuda) return torch::kCPU;
  if (c.train.deterministic) {
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  return {torch::kCUDA, static_cast<c10::DeviceIndex>(env_int("LOCAL_RANK", env.rendezvous.rank) % count)};
}

// NCCL needs one GPU per rank: only when this node's ranks (LOCAL_WORLD_SIZE, as torchrun sets
// it; else all ranks) fit on its GPUs. Otherwise deltas and gradients go through Gloo via host.
// Live recovery re-forms Gloo groups only: its ranks stay on Gloo.
int nccl_device(const Config& c, const RunEnv& env, const torch::Device& device) {
  if (!device.is_cuda() || env.rendezvous.world_size == 1 || c.network.recovery == Recovery::Live) return -1;
  const int local_world = env_int("LOCAL_WORLD_SIZE", env.rendezvous.world_size);
  return local_world <= static_cast<int>(torch::cuda::device_count()) ? device.index() : -1;
}

// All mutable state of one rank's run: what a checkpoint must capture.
struct Progress {
  int64_t step = 0;  // inner steps completed
  int64_t rounds = 0;
  double tokens = 0, flops = 0, flops_full = 0, bytes_sent = 0, sync_seconds = 0;
  double bytes_received = 0, network_wait_seconds = 0;
};

// A peer is silent (network.heartbeat_s): this rank stops as a dead peer makes it stop (exit 3,
// the gang is restarted), now rather than after network.timeout_s. From the heartbeat's thread,
// while the training thread may be blocked in a collective that would wait for the peer.
[[noreturn]] void stop_for_lost_peer(const Heartbeat::Lost& lost) {
  const auto status = exit_status_of(PeerError(Heartbeat::describe(lost)));
  spdlog::error("{}", status.message);
  write_termination_message(status.message);
  spdlog::default_logger()->flush();  // not shutdown(): the training thread may be logging
  std::_Exit(status.code);
}

// This rank's training thread has made no progress for its window (comm/progress_clock.h): it
// has stopped beating, so its peers fence it; the process ends so that its supervisor replaces
// it (under recovery live it alone: exit 5; under gang the gang: exit 3). From the heartbeat's
// thread, while the training thread is stuck.
[[noreturn]] void stop_hung_rank(double idle_s, double window_s, bool live) {
  const std::string what = fmt::format(
      "this rank's training thread has made no progress for {:.1f} s (window {:.1f} s, "
      "network.progress_timeout_s): it is hung, and leaves the group to be replaced",
      idle_s, window_s);
  const auto status = live ? exit_status_of(OutOfGroup(what)) : exit_status_of(PeerError(what));
  spdlog::error("{}", status.message);
  write_termination_message(status.message);
  spdlog::default_logger()->flush();
  std::_Exit(status.code);
}

class Run {
 public:
  Run(const Config& c, const RunEnv& env)
      : c_(c),
        env_(env),
        ddp_(c.method == Method::Ddp),
        live_(c.network.recovery == Recovery::Live && env.rendezvous.world_size > 1),
        wire_(wire_plan(c)),
        device_(rank_device(c, env)),
        collectives_(env.rendezvous, std::chrono::milliseconds(static_cast<int64_t>(c.network.timeout_s * 1000)),
                     nccl_device(c, env, device_)),
        heartbeat_(
            env.rendezvous, std::chrono::milliseconds(static_cast<int64_t>(c.network.heartbeat_s * 1000)),
            [this](const Heartbeat::Lost& lost) { on_lost(lost); }, "ppu/heartbeat/", live_,
            /*start_now=*/!collectives_.joining()),
        plan_(SlicePlan::from_config(c, env.rendezvous.world_size, env.rendezvous.rank)),
        schedule_(c, c.model),
        dataset_(load_dataset(c)),
        loader_(dataset_, env.rendezvous.rank, env.rendezvous.world_size, c.train.seed, c.inner.batch_size,
                c.model.seq_len,
                c.data.sampling == DataSampling::Contiguous ? data::RankSampling::Contiguous : data::RankSampling::Iid),
        model_(c.model, plan_, c.train.seed, device_,
               c.train.dtype == Dtype::Bf16 ? torch::kBFloat16 : torch::kFloat32),
        inner_(c.inner, c.train.steps, model_.trainable(), decay_mask(c.inner, model_.layout()), model_.masters()),
        outer_(c.outer, model_, schedule_, collectives_, c.network.collective),
        metrics_(
            env.metrics_port,
            {{"rank", std::to_string(env.rendezvous.rank)}, {"run_id", env.run_id}, {"method", method_name(c.method)}}),
        flops_(step_flops(c.model, c.inner.batch_size, c.model.seq_len, plan_)),
        profiler_(c.train.profile_dir, c.train.profile_first_step, c.train.profile_steps, env.rendezvous.rank, device_),
        faults_(env.rendezvous.rank, collectives_.joining()) {
    // Progress, not liveness: a hung training thread stops this rank's heartbeat.
    if (c.network.progress_timeout_s > 0) collectives_.progress().set_window(c.network.progress_timeout_s);
    heartbeat_.watch_progress(collectives_.progress(), [this](double idle_s) {
      stop_hung_rank(idle_s, collectives_.progress().window(), live_);
    });
    if (!env.checkpoint_dir.empty()) store_.emplace(env.checkpoint_dir, c.checkpoint.keep, collectives_);
    if (live_) {
      // No wait of the live path may outlast a few heartbeat windows (a member that died while
      // a group formed must not hold the others for network.timeout_s).
      const auto beat = std::chrono::milliseconds(static_cast<int64_t>(c.network.heartbeat_s * 1000));
      collectives_.set_connect_timeout(std::max<std::chrono::milliseconds>(3 * beat, std::chrono::seconds(5)));
      if (!env.rendezvous.external_store)
        throw ConfigError("config key 'network.recovery' is 'live' but the store is rank 0's: set " +
                          std::string(contract::env::kExternalStore) +
                          "=1 with a ppu-rendezvous at MASTER_ADDR:MASTER_PORT (ppu-launch and the operator do)");
      group_.emplace(collectives_, [this](int rank) { return heartbeat_.silent(rank); });
      // A store request waits at most a heartbeat window; a lost store may stay away up to
      // network.timeout_s while its supervisor restarts it (then the gang restarts).
      group_->set_store_limits(std::max<std::chrono::milliseconds>(beat, std::chrono::seconds(2)),
                               std::chrono::milliseconds(static_cast<int64_t>(c.network.timeout_s * 1000)));
      heartbeat_.announce_with(group_->announcer());
    }
    recovery_.policy = choice_name(c.network.recovery);
    metrics_.set_live(collectives_.world_size(), 1);
    model_.set_recompute(c.train.recompute);
    // Deterministic fp32 CUDA runs keep the explicit attention: SDPA would pick its
    // memory-efficient kernel (flash needs 16-bit inputs), whose backward is nondeterministic.
    if (device_.is_cuda() && c.train.deterministic && !model_.mixed_precision()) model_.set_fused_attention(false);
    // bf16: the output head's cross-entropy in chunks (by default of at most 64 MiB of fp32
    // logits), so the full [B*S, vocab] fp32 logits never exist (fp32 keeps the plain, bit-exact
    // path). Larger chunks trade memory for fewer passes over the fp32 dL/dW (docs/GPU.md).
    if (model_.mixed_precision())
      model_.set_loss_chunk(c.train.loss_chunk_tokens > 0 ? c.train.loss_chunk_tokens
                                                          : std::max<int64_t>(1, (int64_t{16} << 20) / c.model.vocab));
  }

  RunSummary run() {
    if (collectives_.joining()) {
      if (!rejoin()) return finished_without_this_rank();
    } else {
      resume();
    }
    const auto start = Clock::now();
    const int64_t first = p_.step;
    double loss = 0;
    for (int64_t t = p_.step; t < c_.train.steps; ++t) {
      faults_.before_step(t, [this] { outer_.global().front().view({-1})[0].add_(1.0); });
      const auto step_start = Clock::now();
      model_.begin_step(t);
      profiler_.before_step(t);
      loss = inner_step(t);  // lines 7–10
      step_seconds_.push_back(std::chrono::duration<double>(Clock::now() - step_start).count());
      made_progress();
      profiler_.after_step(t);
      p_.step = t + 1;
      if (!ddp_) {
        finish_due_syncs();
        for (int f : schedule_.due(p_.step)) outer_sync(f);  // lines 11–14
        if (p_.step == c_.train.steps) finish_training();
      }
      if (p_.step % c_.outer.sync_every == 0 || p_.step == c_.train.steps) end_of_round();
      report(loss, start, first);
      evaluate_if_due();
    }
    // Training time excludes evaluation (done on the global θ, once per run, not per rank).
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    const double seconds = wall - eval_seconds_;
    const double eval = evaluate();
    auto result = summary(loss, eval, seconds, p_.step > first ? seconds / (p_.step - first) : 0);
    if (group_ && collectives_.rank() == 0) group_->finish(nlohmann::json(result).dump());  // for late replacements
    heartbeat_.leave();  // the last collective is behind: peers may finish after this rank exits
    return result;
  }

  // A replacement that the job finished without: it reports the job's result (the global θ's
  // eval loss and checksum, steps, rounds, as a member summarised them) with nothing trained
  // by this process, so that its summary and termination message are still the job's.
  RunSummary finished_without_this_rank() {
    spdlog::info("the job finished before rank {} could rejoin: reporting the job's result", env_.rendezvous.rank);
    auto r = nlohmann::json::parse(group_->finished_result()).get<RunSummary>();
    r.rank = env_.rendezvous.rank;
    r.tokens = r.flops_executed = r.flops_full_backward = r.flops_saved_fraction = 0;
    r.bytes_sent = r.bytes_received = r.bytes_allreduced = r.network_wait_seconds = r.sync_seconds = 0;
    r.recovery = recovery_;
    r.recovery.live_ranks = 0;  // never in the final group
    return r;
  }

 private:
  // X ~ D_k; g on I_train only (partial backward); InnerOpt on the trainable slices.
  double inner_step(int64_t t) {
    phases_.start();
    const auto tokens = to_tensor(loader_.next()).to(device_);
    phases_.lap(StepPhases::kBatch);
    auto loss = model_.loss(tokens);
    phases_.lap(StepPhases::kForward);
    loss.backward();
    grad_bytes_ = 0;
    for (const auto& p : model_.trainable())
      if (p.grad().defined()) grad_bytes_ += p.grad().nbytes();
    phases_.lap(StepPhases::kBackward);
    if (ddp_) allreduce_gradients();
    phases_.lap(StepPhases::kAllreduce);
    lr_ = inner_.step(t);
    phases_.lap(StepPhases::kOptimizer);
    p_.tokens += static_cast<double>(tokens.size(0)) * (tokens.size(1) - 1);
    p_.flops += flops_.executed();
    p_.flops_full += flops_.full();
    metrics_.add_step(flops_.executed(), flops_.full(), static_cast<double>(tokens.size(0)) * (tokens.size(1) - 1));
    return loss.item<double>();
  }

  // DDP: average the full gradient over ranks every step, as one flat buffer.
  void allreduce_gradients() {
    const auto start = Clock::now();
    std::vector<torch::Tensor> flat;
    for (const auto& p : model_.trainable()) flat.push_back(p.grad().reshape({-1}));
    auto buffer = torch::cat(flat).to(torch::kFloat32);
    AllreduceStats wire;
    if (buffer.is_cuda() && collectives_.has_nccl()) {  // NCCL's own ring, in the wire dtype
      auto on_wire = wire_.dtype == WireDtype::Bf16 ? buffer.to(torch::kBFloat16) : buffer;
      collectives_.allreduce_sum(on_wire);
      if (!on_wire.is_same(buffer)) buffer.copy_(on_wire);
      wire.bytes_sent = wire.bytes_received =
          wire_layout(buffer.numel(), env_.rendezvous.world_size, wire_.dtype, wire_.row_length)
              .bytes_per_rank(env_.rendezvous.world_size);
    } else {  // our codec on the host (bf16 values summed in fp32); CUDA ranks over Gloo via a copy
      ExchangeOptions options;
      options.schedule = wire_.schedule;
      options.dtype = wire_.dtype;
      options.row_length = wire_.row_length;
      auto host = buffer.is_cuda() ? buffer.to(torch::kCPU) : buffer;
      wire = exchange_delta_sum(collectives_, host, options);
      if (!host.is_same(buffer)) buffer.copy_(host);
    }
    buffer.div_(env_.rendezvous.world_size);
    int64_t offset = 0;
    for (const auto& p : model_.trainable()) {
      p.mutable_grad().copy_(buffer.narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    p_.bytes_sent += wire.bytes_sent;
    p_.bytes_received += wire.bytes_received;
    p_.sync_seconds += seconds;
    p_.network_wait_seconds += seconds;  // blocking: the step waits for the whole exchange
    metrics_.add_sync("gradients", wire.bytes_sent, wire.bytes_received, seconds, seconds);
  }

  // With overlap τ > 0 a fragment's exchange runs in the background for τ inner steps; the
  // last step and checkpoints complete every exchange first.
  void outer_sync(int fragment) {
    check_theta(fragment);
    if (group_) {
      record(fragment, live_sync(fragment, false));
      return;
    }
    const bool last = p_.step == c_.train.steps;
    if (c_.outer.overlap_steps == 0 || last) {
      if (last) drain_syncs();
      record(fragment, outer_.sync(fragment));
      return;
    }
    in_flight_.push_back({p_.step + c_.outer.overlap_steps, outer_.begin(fragment, true)});
  }

  void finish_due_syncs() {
    while (!in_flight_.empty() && in_flight_.front().apply_at <= p_.step) {
      auto& s = in_flight_.front();
      record(s.sync.fragment, outer_.finish(s.sync));
      in_flight_.pop_front();
    }
  }

  // After the last step. Exchanges still in flight were scheduled: they complete with their
  // outer step. A fragment whose schedule has no sync at the last step never gets an outer step
  // there; with outer.final_sync = average its trailing local progress is folded into θ by one
  // plain count-normalised average (no momentum), with none θ stays at its last sync.
  void finish_training() {
    drain_syncs();
    if (c_.outer.final_sync != FinalSync::Average) return;
    for (int f : schedule_.unsynced_at_end(c_.train.steps)) {
      check_theta(f);
      record(f, group_ ? live_sync(f, true) : outer_.average(f));
    }
  }

  // θ is the same on every rank: before a fragment's sync the group agrees on a digest of its θ
  // and momentum. A rank holding another one (a flipped bit, a bug) takes the majority's before
  // it computes its delta, so the exchange never carries the drift; it is logged and counted,
  // never silent. Ties go to the lowest group rank's value.
  void check_theta(int fragment) {
    if (collectives_.job_size() == 1) return;
    const auto mine = static_cast<int64_t>(outer_.fragment_digest(fragment));
    const auto digests = live([&] { return collectives_.allgather(torch::tensor({mine}, torch::kInt64)); });
    std::vector<int64_t> all;
    for (const auto& d : digests) all.push_back(d.item<int64_t>());
    int root = 0;
    for (int r = 0; r < static_cast<int>(all.size()); ++r)
      if (std::count(all.begin(), all.end(), all[r]) > std::count(all.begin(), all.end(), all[root])) root = r;
    std::vector<int> wrong;
    for (int r = 0; r < static_cast<int>(all.size()); ++r)
      if (all[r] != all[root]) wrong.push_back(collectives_.members()[r]);
    if (wrong.empty()) return;
    spdlog::error("θ of fragment {} before its sync at step {} differs on rank(s) [{}]: resynchronised from rank {}",
                  schedule_.fragments()[fragment].name, p_.step, ranks_text(wrong), collectives_.members()[root]);
    live([&] {
      outer_.resync_fragment(collectives_, fragment, root);
      return true;
    });
    recovery_.theta_mismatches += static_cast<int64_t>(wrong.size());
    metrics_.add_theta_mismatches(static_cast<int>(wrong.size()));
  }

  // ---- Live recovery (network.recovery=live; docs/RECOVERY.md) ----

  // One outer sync that survives the loss of ranks: the exchange takes effect only if every
  // member completed it; otherwise the survivors re-form and run it again with their own
  // deltas, normalised by the live owners of each element.
  SyncResult live_sync(int fragment, bool plain_average) {
    auto sync = live([&] {
      auto s = outer_.begin(fragment, false);
      s.plain_average = plain_average;
      outer_.complete(s);
      return s;
    });
    return outer_.apply(sync);
  }

  // Runs `work` (collectives of the group) until it completes on every member of one
  // generation; without a live group it just runs it.
  template <class F>
  auto live(F&& work) -> decltype(work()) {
    if (!group_) return work();
    for (;;)
      if (auto result = attempt(work)) return std::move(*result);
  }

  // Runs `work` once and agrees with every member whether it completed everywhere
  // (LiveGroup::commit). If not, the result is dropped and the survivors re-form: the members
  // of a generation therefore leave every collective together and never go on from different
  // ones (a member can complete an all-gather that another saw fail).
  template <class F>
  auto attempt(F&& work) -> std::optional<decltype(work())> {
    std::optional<decltype(work())> result;
    std::string failure;
    try {
      result.emplace(work());
    } catch (const StoreLost& e) {  // counted by the commit that finds the store again
      failure = e.what();
    } catch (const PeerError& e) {
      failure = e.what();
      note_fault("peer_failed");
    }
    const bool committed = group_->commit(failure.empty());
    count_store_outages();
    if (committed) return result;
    note_fault("peer_failed");  // a no-op when this rank's own failure is noted already
    recover(failure.empty() ? "a member did not complete a collective" : failure);
    return std::nullopt;
  }

  // ---- Faults by kind (summary recovery.faults, ppu_faults_total) ----

  // The first fault since the last re-formation, and when it was seen (any thread).
  void note_fault(const char* kind) {
    std::lock_guard<std::mutex> lock(fault_mutex_);
    if (!fault_) fault_ = {kind, Clock::now()};
  }

  // The group re-formed: the pending fault is recovered from.
  void fault_recovered() {
    std::optional<std::pair<std::string, Clock::time_point>> fault;
    {
      std::lock_guard<std::mutex> lock(fault_mutex_);
      fault = std::exchange(fault_, std::nullopt);
    }
    if (fault) tally_fault(fault->first, std::chrono::duration<double>(Clock::now() - fault->second).count());
  }

  void tally_fault(const std::string& kind, double seconds) {
    auto& t = recovery_.faults[kind];
    ++t.count;
    t.recover_seconds += seconds;
    metrics_.add_fault(kind, seconds);
  }

  // The store's outages LiveGroup went through (a restarted store is rebuilt in place: no
  // re-formation needed unless a member was lost too).
  void count_store_outages() {
    for (const auto& o : group_->take_store_outages())
      tally_fault(o.restarted ? "store_restarted" : "store_lost", o.seconds);
  }

  // A peer is silent: with live recovery the group's collectives are abandoned (a re-formation
  // follows). The store's silence under live recovery changes nothing yet: the collectives go on
  // through Gloo, and the next store request waits for the restarted store (LiveGroup). Under
  // recovery gang any loss stops this rank (exit 3).
  void on_lost(const Heartbeat::Lost& lost) {
    if (!live_) stop_for_lost_peer(lost);
    spdlog::warn("{}", Heartbeat::describe(lost));
    if (lost.rank < 0) {
      spdlog::warn("training goes on; the next store request waits up to network.timeout_s for the store to come back");
      return;
    }
    note_fault("peer_silent");
    collectives_.abort_for(lost.rank, Heartbeat::describe(lost));
  }

  void recover(std::string why) {
    for (;;) {
      const auto start = Clock::now();
      spdlog::warn("the group lost a member ({}): re-forming without it", why);
      group_->set_patience(reform_patience());
      std::vector<int> lost;
      try {
        lost = group_->recover();     // OutOfGroup (exit 5) if the others went on without this rank
      } catch (const PeerError& e) {  // another member was lost while the group formed: again
        why = e.what();
        count_store_outages();
        continue;
      }
      count_store_outages();
      fault_recovered();
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      ++recovery_.recoveries;
      recovery_.recovery_seconds += seconds;
      metrics_.add_recovery(true, seconds);
      after_reform();
      if (lost.empty())  // every member came (a store restart, a collective that failed without a loss)
        spdlog::warn("re-formed in round {} (step {}) with every member: generation {} has ranks [{}] ({:.1f} s)",
                     p_.rounds + 1, p_.step, group_->generation(), ranks_text(collectives_.members()), seconds);
      else
        spdlog::warn("lost rank(s) [{}] in round {} (step {}): generation {} has ranks [{}] ({:.1f} s to re-form)",
                     ranks_text(lost), p_.rounds + 1, p_.step, group_->generation(), ranks_text(collectives_.members()),
                     seconds);
      const auto live = static_cast<double>(collectives_.world_size());
      if (live < c_.network.min_live_fraction * collectives_.job_size())
        throw LiveRecoveryGaveUp(
            "live recovery gives up: " + std::to_string(collectives_.world_size()) + " of " +
            std::to_string(collectives_.job_size()) + " ranks live, below network.min_live_fraction = " +
            fmt::format("{}", c_.network.min_live_fraction) + ": gang restart from the last checkpoint");
      // A generation that also took replacements in (a concurrent admission decided it)
      // sends them the state first, as live_round_end's admission does.
      if (group_->newcomers().empty()) return;
      why = "taking rank(s) [" + ranks_text(group_->newcomers()) + "] in failed";
      if (take_in_newcomers()) return;
    }
  }

  // How long a re-formation waits for members that neither arrive nor fall silent: a member
  // still in a step arrives when it ends, one still forming the previous generation when Gloo
  // gives up on the dead peer (its store wait and its pair connect, a connect timeout each);
  // past the longer of the two plus two heartbeats it is hung or cut off, and the others go on
  // without it (network.timeout_s at most).
  std::chrono::milliseconds reform_patience() {
    const double window = collectives_.progress().window();
    const double forming = 2 * std::chrono::duration<double>(collectives_.connect_timeout()).count();
    const double seconds =
        std::isfinite(window) ? std::max(window, forming) + 2 * c_.network.heartbeat_s : c_.network.timeout_s;
    return std::chrono::milliseconds(static_cast<int64_t>(1000 * std::min(seconds, c_.network.timeout_s)));
  }

  // The members' side of taking replacements in: the state to the newcomers, then the commit
  // that the newcomers make too (rejoin). Whether every member and newcomer completed it.
  bool take_in_newcomers() {
    bool sent = true;
    try {
      share_state(false);
    } catch (const PeerError& e) {
      spdlog::warn("sending the state to rank(s) [{}] failed: {}", ranks_text(group_->newcomers()), e.what());
      sent = false;
    }
    return group_->commit(sent);
  }

  // The owner counts of the new group's members (every rank: the configured ones).
  void after_reform() {
    std::vector<SlicePlan> plans;
    for (int r : collectives_.members()) plans.push_back(SlicePlan::from_config(c_, collectives_.job_size(), r));
    outer_.set_owners(std::move(plans), collectives_.job_size());
    metrics_.set_live(collectives_.world_size(), outer_.min_coverage());
  }

  // The newcomers of this generation get θ, the momentum and where the run is from its source;
  // a newcomer's inner optimiser starts fresh and its data continues its rank's stream.
  void share_state(bool newcomer) {
    const auto& members = collectives_.members();
    const int root = static_cast<int>(std::find(members.begin(), members.end(), group_->source()) - members.begin());
    auto where =
        torch::tensor({p_.step, p_.rounds, uncovered_rounds_, last_checkpoint_round_, degraded_rounds_}, torch::kInt64);
    collectives_.broadcast(where, root);
    outer_.share_state(collectives_, root, newcomer);
    share_inner_state(root);
    if (!newcomer) return;
    p_.step = where[0].item<int64_t>();
    p_.rounds = where[1].item<int64_t>();
    uncovered_rounds_ = where[2].item<int64_t>();
    last_checkpoint_round_ = where[3].item<int64_t>();
    degraded_rounds_ = where[4].item<int64_t>();
    loader_.seek(static_cast<uint64_t>(p_.step));  // one batch per inner step
  }

  // network.replacement_inner_state coowner: each newcomer, in job-rank order, takes the inner
  // AdamW state (moments and step) of the lowest co-owner of its slice that was already a member
  // (core/coowners.h), by one broadcast from that co-owner; without one it starts fresh. Its
  // weights stay θ: the co-owner's local weights carry the co-owner's own progress of this round,
  // which the co-owner's delta already brings to θ; a copy would count it twice. The newcomers
  // come from the source (a newcomer's LiveGroup does not know the others), so every member and
  // newcomer runs the same broadcasts.
  void share_inner_state(int root) {
    if (c_.network.replacement_inner_state != ReplacementState::Coowner) return;
    auto flags = torch::zeros({collectives_.job_size()}, torch::kInt64);
    for (int r : group_->newcomers()) flags[r] = 1;
    collectives_.broadcast(flags, root);
    std::vector<int> newcomers;
    for (int r = 0; r < collectives_.job_size(); ++r)
      if (flags[r].item<int64_t>() != 0) newcomers.push_back(r);
    const auto& members = collectives_.members();
    for (int n : newcomers) {
      const int source = coowner_source(n, members, newcomers, plan_.slices());
      const int me = collectives_.job_rank();
      if (source < 0) {
        if (me == n)
          spdlog::info("rank {}: no live co-owner of slice {}: its inner state starts fresh", n, plan_.slice_index());
        continue;
      }
      const int from = static_cast<int>(std::find(members.begin(), members.end(), source) - members.begin());
      inner_.share_state(collectives_, from, me == n);
      if (me == source || me == n)
        spdlog::info("inner state of rank {} {} rank {} (co-owner of slice {}): digest {}", n,
                     me == n ? "taken from" : "sent by", source, plan_.slice_index(), hex64(inner_.state_digest()));
    }
  }

  // A replacement process: join the live group at its next round boundary, take the state from
  // a live member, then do what the members do after taking it in (checkpoint, evaluation).
  bool rejoin() {
    const auto start = Clock::now();
    spdlog::info("rank {} is a replacement: asking the live group to take it back", env_.rendezvous.rank);
    std::string failure;
    try {
      if (!group_->join()) return false;
      heartbeat_.start();  // only now: until the group took it in, its predecessor's silence spoke
      share_state(true);
    } catch (const PeerError& e) {  // the group is not at fault: only this rank starts again (exit 5)
      failure = e.what();
    }
    // The members commit the same step (take_in_newcomers): all of them hold the shared state,
    // or none goes on with this process.
    const bool joined = group_->commit(failure.empty());
    count_store_outages();
    if (!joined) throw OutOfGroup("rejoining failed: " + (failure.empty() ? "a member did not complete it" : failure));
    after_reform();
    recovery_.rejoined_at_step = p_.step;
    recovery_.recovery_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    metrics_.set_checkpoint_round(static_cast<double>(std::max<int64_t>(0, last_checkpoint_round_)));
    spdlog::info("rank {} rejoined in round {} (step {}): generation {} has ranks [{}]; state from rank {}",
                 env_.rendezvous.rank, p_.rounds, p_.step, group_->generation(), ranks_text(collectives_.members()),
                 group_->source());
    checkpoint_if_due();
    evaluate_if_due();
    return true;
  }

  // The summary's list of degraded rounds: this round joins the last span when it follows it
  // with the same ranks missing.
  void note_degraded_round() {
    const auto missing = missing_ranks();
    auto& spans = recovery_.degraded;
    if (!spans.empty() && spans.back().last_round == p_.rounds - 1 && spans.back().missing == missing)
      spans.back().last_round = p_.rounds;
    else spans.push_back({p_.rounds, p_.rounds, missing});
  }

  // At a round boundary: count a degraded round, fall back when a slice has gone without a
  // live owner too long, and take replacements back (not after the last step).
  void live_round_end() {
    if (collectives_.world_size() < collectives_.job_size()) {
      ++recovery_.rounds_degraded;
      ++degraded_rounds_;
      metrics_.add_degraded_round();
      note_degraded_round();
    }
    if (outer_.min_coverage() == 0) {
      if (++uncovered_rounds_ > c_.network.max_uncovered_rounds)
        give_up("an element has had no live owner for " + std::to_string(uncovered_rounds_) +
                " rounds (network.max_uncovered_rounds = " + std::to_string(c_.network.max_uncovered_rounds) +
                "): gang restart from the last checkpoint");
    } else {
      uncovered_rounds_ = 0;
    }
    if (p_.step == c_.train.steps) return;
    const auto joiners = live([&] { return group_->pending_joiners(); });
    if (joiners.empty()) return;
    const auto start = Clock::now();
    // Not run again when it fails: the recovery drops whoever was lost, a newcomer included,
    // and the next boundary sees the requests that are still standing.
    const auto added = attempt([&] {
      auto newcomers = group_->admit(joiners);
      if (!newcomers.empty()) share_state(false);
      return newcomers;
    });
    if (!added) return;
    after_reform();  // the generation admit formed, with or without the joiners
    if (added->empty()) return;
    ++recovery_.rejoins;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    recovery_.recovery_seconds += seconds;
    metrics_.add_recovery(false, seconds);
    spdlog::info("rank(s) [{}] rejoined in round {} (step {}): generation {} has ranks [{}]", ranks_text(*added),
                 p_.rounds, p_.step, group_->generation(), ranks_text(collectives_.members()));
  }

  void drain_syncs() {
    while (!in_flight_.empty()) {
      record(in_flight_.front().sync.fragment, outer_.finish(in_flight_.front().sync));
      in_flight_.pop_front();
    }
  }

  void record(int fragment, const SyncResult& r) {
    p_.bytes_sent += r.bytes_sent;
    p_.bytes_received += r.bytes_received;
    p_.sync_seconds += r.seconds;
    p_.network_wait_seconds += r.wait_seconds;
    metrics_.add_sync(schedule_.fragments()[fragment].name, r.bytes_sent, r.bytes_received, r.seconds, r.wait_seconds);
  }

  void end_of_round() {
    ++p_.rounds;
    if (group_) live_round_end();
    checkpoint_if_due();
    if (group_) bound_degraded();
  }

  // network.max_degraded_rounds: a job still missing a rank after this boundary's admission, for
  // more consecutive rounds than that, falls back to a gang restart (exit 3), after this round's
  // checkpoint if one was due, so the restart loses no more than checkpoint.every_rounds. Every
  // member counts the same rounds (newcomers get the count), so all of them decide alike.
  // Rounds, not seconds: members' clocks differ, their round counts do not.
  void bound_degraded() {
    if (collectives_.world_size() == collectives_.job_size()) {
      degraded_rounds_ = 0;
      return;
    }
    if (degraded_rounds_ <= c_.network.max_degraded_rounds || p_.step == c_.train.steps) return;
    give_up("the job has run with rank(s) [" + ranks_text(missing_ranks()) + "] missing for " +
            std::to_string(degraded_rounds_) +
            " consecutive rounds (network.max_degraded_rounds = " + std::to_string(c_.network.max_degraded_rounds) +
            "): gang restart from the checkpoint of round " + std::to_string(last_checkpoint_round_));
  }

  std::vector<int> missing_ranks() const {
    std::vector<int> missing;
    for (int r = 0; r < collectives_.job_size(); ++r)
      if (!std::binary_search(collectives_.members().begin(), collectives_.members().end(), r)) missing.push_back(r);
    return missing;
  }

  // Live recovery falls back to a gang restart (exit 3): the lowest member notes why in the
  // checkpoint directory (kFallbackNote), so that the restarted run logs it and its summary
  // names it (recovery.fallback).
  [[noreturn]] void give_up(const std::string& why) {
    const std::string message = "live recovery gives up: " + why;
    spdlog::error("{}", message);
    if (store_ && collectives_.rank() == 0) {
      try {
        const nlohmann::json note = {{"reason", message}, {"round", p_.rounds}, {"step", p_.step}};
        atomic_write_file(store_->dir() + "/" + kFallbackNote, note.dump(2));
      } catch (const std::exception& e) {
        spdlog::warn("could not note the fallback in {}: {}", store_->dir(), e.what());
      }
    }
    throw LiveRecoveryGaveUp(message);
  }

  // A checkpoint holds every job rank's state; a degraded group writes one too (save_checkpoint).
  void checkpoint_if_due() {
    if (!store_ || p_.rounds % c_.checkpoint.every_rounds != 0) return;
    drain_syncs();
    live([&] {
      save_checkpoint();
      return true;
    });
  }

  // The running totals a checkpoint carries, by name (checkpoint_key::total).
  std::vector<std::pair<std::string, double*>> totals() {
    return {{"tokens", &p_.tokens},
            {"flops", &p_.flops},
            {"flops_full", &p_.flops_full},
            {"bytes_sent", &p_.bytes_sent},
            {"sync_seconds", &p_.sync_seconds},
            {"bytes_received", &p_.bytes_received},
            {"network_wait_seconds", &p_.network_wait_seconds}};
  }

  // Every member writes its own part; for each job rank missing from the group, one member
  // stands in (core/coowners.h: the lowest live co-owner of its slice, else the lowest member)
  // and writes that rank's part (stand_in_part). The digests logged let a test compare what a
  // restart resumes with what the live job held.
  void save_checkpoint() {
    const ProgressClock::Waiting writing(collectives_.progress());  // I/O, not a hung thread
    std::vector<CheckpointStore::StandIn> stand_ins;
    std::vector<int> missing = missing_ranks(), mine;
    for (int r : missing)
      if (stand_in(r, collectives_.members(), plan_.slices()) == collectives_.job_rank()) {
        mine.push_back(r);
        stand_ins.push_back({r, [this, r](torch::serialize::OutputArchive& a) { write_stand_in_part(a, r); }});
      }
    store_->save(
        p_.rounds,
        [&](torch::serialize::OutputArchive& a) {
          model_.save(a);
          torch::serialize::OutputArchive inner;
          inner_.save(inner);
          a.write(checkpoint_key::kInner, inner);
          torch::serialize::OutputArchive feedback;
          outer_.save_feedback(feedback);
          a.write(checkpoint_key::kFeedback, feedback);
          save_progress(a);
        },
        stand_ins, [&](torch::serialize::OutputArchive& a) { outer_.save(a); }, to_yaml(c_));
    metrics_.set_checkpoint_round(p_.rounds);
    last_checkpoint_round_ = p_.rounds;
    spdlog::info("checkpoint round {} written to {}{} (digests: outer {}, inner {}{})", p_.rounds, store_->dir(),
                 missing.empty() ? "" : fmt::format(" with rank(s) [{}] missing", ranks_text(missing)),
                 hex64(outer_digest()), hex64(inner_.state_digest()),
                 mine.empty() ? "" : fmt::format("; this rank wrote the part of rank(s) [{}]", ranks_text(mine)));
  }

  // The part of job rank `missing`, written by this member standing in for it (docs/RECOVERY.md,
  // "Checkpoints of a degraded job"): weights θ (the missing rank's own progress is lost with
  // it); this member's inner state if it trains the same slice, else none (fresh); the job's step
  // as its data position (a rank's batches are a function of (seed, rank, step)); no
  // error-feedback residuals (live recovery runs without them); this member's counters.
  void write_stand_in_part(torch::serialize::OutputArchive& a, int missing) {
    write_model_as_theta(a, model_.layout(), outer_.global(),
                         SlicePlan::from_config(c_, collectives_.job_size(), missing), model_.dtype());
    torch::serialize::OutputArchive inner;
    if (same_slice(missing, collectives_.job_rank(), plan_.slices())) inner_.save(inner);
    else inner_.save_fresh(inner);
    a.write(checkpoint_key::kInner, inner);
    torch::serialize::OutputArchive feedback;
    outer_.save_feedback(feedback);
    a.write(checkpoint_key::kFeedback, feedback);
    write_scalar(a, checkpoint_key::kStep, p_.step);
    write_scalar(a, checkpoint_key::kRounds, p_.rounds);
    write_scalar(a, checkpoint_key::kLoaderPosition, p_.step);  // one batch per inner step
    for (const auto& [name, value] : totals()) write_scalar(a, checkpoint_key::total(name), *value);
  }

  // θ and the outer momentum of every fragment, as one digest (the same on every rank).
  uint64_t outer_digest() const {
    uint64_t h = kFnv1a64Offset;
    for (int f = 0; f < static_cast<int>(schedule_.fragments().size()); ++f) {
      const uint64_t d = outer_.fragment_digest(f);
      h = fnv1a64(&d, sizeof d, h);
    }
    return h;
  }

  void resume() {
    if (!store_) return;
    auto ckpt = store_->load_latest(c_.checkpoint.start_over_if_unusable);
    if (!ckpt) return;
    try {
      load_from(*ckpt);
    } catch (const std::exception& e) {  // a field missing or of another shape, a malformed archive (c10::Error)
      throw CheckpointError("checkpoint " + ckpt->path + " cannot be loaded: " + e.what());
    }
    metrics_.set_checkpoint_round(ckpt->round);
    last_checkpoint_round_ = ckpt->round;
    spdlog::info("resumed from {} at step {} (round {}; digests: outer {}, inner {})", ckpt->path, p_.step, p_.rounds,
                 hex64(outer_digest()), hex64(inner_.state_digest()));
    note_fallback(ckpt->round);
  }

  // The run before this one fell back from live recovery to a gang restart (give_up): say so,
  // and name it in the summary (recovery.fallback). A note older than the checkpoint resumed
  // from belongs to an earlier restart.
  void note_fallback(int64_t resumed_round) {
    const std::string path = store_->dir() + "/" + kFallbackNote;
    if (!std::filesystem::exists(path)) return;
    try {
      const auto note = nlohmann::json::parse(read_file_bytes(path));
      if (note.at("round").get<int64_t>() < resumed_round) return;
      recovery_.fallback = note.at("reason").get<std::string>();
      spdlog::warn("this run is the gang restart that live recovery fell back to at step {}: {}",
                   note.value("step", int64_t{-1}), recovery_.fallback);
    } catch (const std::exception& e) {
      spdlog::warn("{} is unreadable: {}", path, e.what());
    }
  }

  // Every field of the checkpoint into this rank's state; throws naming the field that is
  // missing or does not fit the model (resume() adds the checkpoint's path).
  void load_from(LoadedCheckpoint& ckpt) {
    model_.load(ckpt.rank_part);
    torch::serialize::InputArchive inner;
    ckpt.rank_part.read(checkpoint_key::kInner, inner);
    inner_.load(inner);
    if (torch::serialize::InputArchive feedback; ckpt.rank_part.try_read(checkpoint_key::kFeedback, feedback))
      outer_.load_feedback(feedback);
    load_progress(ckpt.rank_part);
    outer_.load(ckpt.global_part);
  }

  // The trainer's own section: where the run is (step, round, data position) and its totals.
  void save_progress(torch::serialize::OutputArchive& a) {
    write_scalar(a, checkpoint_key::kStep, p_.step);
    write_scalar(a, checkpoint_key::kRounds, p_.rounds);
    write_scalar(a, checkpoint_key::kLoaderPosition, static_cast<int64_t>(loader_.position()));
    for (const auto& [name, value] : totals()) write_scalar(a, checkpoint_key::total(name), *value);
  }
  void load_progress(torch::serialize::InputArchive& a) {
    p_.step = read_int64(a, checkpoint_key::kStep);
    p_.rounds = read_int64(a, checkpoint_key::kRounds);
    loader_.seek(read_int64(a, checkpoint_key::kLoaderPosition));
    for (const auto& [name, value] : totals()) *value = read_double(a, checkpoint_key::total(name));
  }

  // Held-out loss of the global θ (the model the method yields at this point: each fragment
  // as of its last outer step; DDP's parameters are global). The eval batches are split over
  // the ranks (rank r takes batches r, r + K, ...) and the per-batch sums are gathered and
  // added in rank order, so every rank reports the same number and the job does the work
  // once. On the host the view reads the global tensors in place.
  double evaluate() {
    const auto start = Clock::now();
    torch::NoGradGuard no_grad;
    const Transformer global(c_.model, global_params(), device_);
    const double loss = live([&] {
      // The group's ranks share the batches (after a loss, the survivors all of them).
      const int rank = collectives_.rank(), stride = collectives_.world_size();
      const double mine =
          eval_loss_sum(global, dataset_, c_, rank, stride, device_, [this] { collectives_.progress().tick(); });
      double total = 0;
      for (const auto& part : collectives_.allgather(torch::tensor({mine}, torch::kFloat64)))
        total += part.item<double>();
      return total / c_.train.eval_batches;
    });
    const int rank = collectives_.rank(), stride = collectives_.world_size();  // of the evaluation that counted
    eval_batches_done_ += rank < c_.train.eval_batches ? (c_.train.eval_batches - 1 - rank) / stride + 1 : 0;
    metrics_.set_eval(loss, floor_perplexity());
    eval_seconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    return loss;
  }

  // A step done: tick the progress clock and, with network.progress_timeout_s = 0, derive the
  // window from the measured steps: 20 median steps, at least 2 heartbeat windows (not watched
  // until a few steps are measured: start-up, data loading and the first steps are slower).
  void made_progress() {
    auto& progress = collectives_.progress();
    progress.tick();
    if (c_.network.progress_timeout_s > 0 || step_seconds_.size() < kWarmupSteps + 3) return;
    if (step_seconds_.size() % 10 != 3 && std::isfinite(progress.window())) return;                 // every 10 steps
    const std::size_t from = step_seconds_.size() > 50 ? step_seconds_.size() - 50 : kWarmupSteps;  // the last 50
    progress.set_window(std::max(2 * c_.network.heartbeat_s, 20 * median_after(step_seconds_, from)));
  }

  // Median wall time of one inner step (lines 7–10: batch, forward, backward, optimiser) after
  // this process's first two steps; outer syncs, evaluation and logging are not in it. Benches
  // compare it with other implementations of the same step.
  double steady_inner_step_seconds() const { return median_after(step_seconds_, kWarmupSteps); }

  double floor_perplexity() const { return dataset_.entropy_rate_nats ? std::exp(*dataset_.entropy_rate_nats) : 0; }

  // The global parameters in fp32: the outer optimiser's θ; DDP's are the local ones (in bf16
  // their fp32 masters, every parameter being trainable).
  std::vector<torch::Tensor> global_params() const {
    if (!ddp_) return outer_.global();
    return model_.fp32_weights();
  }

  StateBytes measured_state() const {
    StateBytes s;
    for (const auto& w : model_.weights()) s.weights += w.nbytes();
    for (const auto& m : model_.masters()) s.weights += m.nbytes();  // bf16: fp32 masters of trainable slices
    s.gradients = grad_bytes_;
    s.inner_optimizer = inner_.state_bytes();
    if (!ddp_) {
      s.outer_optimizer = outer_.momentum_bytes();
      s.offloaded = outer_.global_bytes();
    }
    return s;
  }

  // The same state if every parameter were trainable, from the measured one.
  StateBytes full_training_state(const StateBytes& measured) const {
    StateBytes s = measured;
    const bool bf16 = model_.mixed_precision();
    const double total = plan_.total_parameters() * 4.0, trainable = plan_.trainable_parameters() * 4.0;
    if (bf16) s.weights += total - trainable;  // every parameter would have an fp32 master
    s.gradients = grad_bytes_ > 0 ? (bf16 ? total / 2 : total) : 0;
    s.inner_optimizer = trainable > 0 ? s.inner_optimizer * total / trainable : 0;
    return s;
  }

  void report(double loss, Clock::time_point start, int64_t first) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count() - eval_seconds_;
    const auto done = static_cast<double>(p_.step - first);
    const double tps = elapsed > 0 ? done * c_.inner.batch_size * c_.model.seq_len / elapsed : 0;
    const double eta = done > 0 ? elapsed / done * static_cast<double>(c_.train.steps - p_.step) : 0;
    metrics_.set_progress(p_.step, c_.train.steps, eta, loss, tps, p_.rounds);
    const StateBytes state = measured_state();
    metrics_.set_state(state, full_training_state(state));
    const auto cuda = cuda_memory(device_.is_cuda() ? device_.index() : -1);
    metrics_.set_memory(process_rss_bytes(), cuda.allocated, cuda.reserved, cuda.peak);
    if (p_.step % c_.train.log_every == 0 || p_.step == c_.train.steps) {
      spdlog::info("step {}/{} loss {:.4f} ppl {:.2f} lr {:.2e} tok/s {:.0f} round {} eta {}", p_.step, c_.train.steps,
                   loss, std::exp(loss), lr_, tps, p_.rounds, duration(eta));
    }
  }

  void evaluate_if_due() {
    if (c_.train.eval_every > 0 && p_.step % c_.train.eval_every == 0 && p_.step < c_.train.steps) {
      const double eval = evaluate();
      spdlog::info("eval step {} loss {:.4f} ppl {:.3f}{} of the global parameters", p_.step, eval, std::exp(eval),
                   floor_perplexity() > 0 ? fmt::format(" (floor {:.3f})", floor_perplexity()) : "");
    }
  }

  RunSummary summary(double loss, double eval, double seconds, double step_seconds) {
    const StateBytes s = measured_state(), full = full_training_state(s);
    auto bytes = [](const StateBytes& b) {
      return StateBytesSummary{b.weights, b.gradients, b.inner_optimizer, b.outer_optimizer, b.offloaded, b.total()};
    };
    // DDP has no outer state: its local parameters are the global ones.
    const auto global = global_params();
    RunSummary r;
    r.rank = env_.rendezvous.rank;
    r.world_size = env_.rendezvous.world_size;
    r.method = method_name(c_.method);
    r.slicing = {slice_mode_name(plan_.mode()), plan_.slices(), choice_name(plan_.jacobian())};
    r.steps = p_.step;
    r.final_loss = loss;
    r.eval_loss = eval;
    r.eval_perplexity = std::exp(eval);
    if (floor_perplexity() > 0) r.eval_perplexity_floor = floor_perplexity();
    r.tokens = p_.tokens;
    r.flops_executed = p_.flops;
    r.flops_full_backward = p_.flops_full;
    r.flops_saved_fraction = p_.flops_full > 0 ? 1 - p_.flops / p_.flops_full : 0;
    r.state_bytes = bytes(s);
    r.state_bytes_full_training = bytes(full);
    r.trainable_params = plan_.trainable_parameters();
    r.total_params = plan_.total_parameters();
    r.outer_rounds = p_.rounds;
    r.last_checkpoint_round = last_checkpoint_round_;
    r.bytes_sent = p_.bytes_sent;
    r.bytes_received = p_.bytes_received;
    r.bytes_allreduced = p_.bytes_sent;
    r.network_wait_seconds = p_.network_wait_seconds;
    r.sync_seconds = p_.sync_seconds;
    r.param_checksum = parameter_checksum(global);
    r.seconds = seconds;
    r.eval_seconds = eval_seconds_;
    r.eval_batches_evaluated = eval_batches_done_;
    r.eval_tokens =
        dataset_.eval_tokens(c_.inner.batch_size, c_.model.seq_len, static_cast<uint64_t>(c_.train.eval_batches));
    r.val_tokens = dataset_.val.size();
    r.data_sampling = choice_name(c_.data.sampling);
    r.eval_parameters = "global";
    r.final_sync = choice_name(ddp_ ? FinalSync::None : c_.outer.final_sync);
    r.step_seconds = step_seconds;
    r.inner_step_seconds_median = steady_inner_step_seconds();
    r.inner_step_phases_median = phases_.medians(kWarmupSteps);
    r.recovery = recovery_;
    r.recovery.live_ranks = collectives_.world_size();
    r.recovery.min_slice_coverage = outer_.min_coverage();
    if (device_.is_cuda()) {
      // Only on CUDA, so CPU summaries keep their keys; peak is since the process started.
      const auto m = cuda_memory(device_.index());
      r.device = device_.str();
      r.cuda_memory_bytes = CudaMemorySummary{m.allocated, m.reserved, m.peak};
    }
    if (env_.final_params) {
      env_.final_params->clear();
      for (const auto& g : global) {
        const auto flat = g.detach().to(torch::kCPU, torch::kFloat32).contiguous().view({-1});
        env_.final_params->insert(env_.final_params->end(), flat.data_ptr<float>(),
                                  flat.data_ptr<float>() + flat.numel());
      }
    }
    return r;
  }

  const Config& c_;
  RunEnv env_;
  bool ddp_;
  bool live_;      // network.recovery=live with more than one rank
  WirePlan wire_;  // the wire dtype ppu-plan reports too: bf16 runs send bf16
  torch::Device device_;
  Collectives collectives_;
  Heartbeat heartbeat_;  // after the rendezvous: every peer is up when it starts
  SlicePlan plan_;
  StreamingSchedule schedule_;
  data::TokenDataset dataset_;
  data::RankLoader loader_;
  Transformer model_;
  InnerOptimizer inner_;
  OuterOptimizer outer_;
  RankMetrics metrics_;
  StepFlops flops_;
  std::optional<CheckpointStore> store_;
  std::optional<LiveGroup> group_;  // network.recovery=live
  RecoverySummary recovery_;
  std::mutex fault_mutex_;  // fault_ is noted by the heartbeat's thread too
  std::optional<std::pair<std::string, Clock::time_point>> fault_;
  int64_t uncovered_rounds_ = 0;  // consecutive rounds with an element without a live owner
  int64_t degraded_rounds_ = 0;   // consecutive rounds finished with a job rank missing
  struct Pending {
    int64_t apply_at;
    OuterOptimizer::InFlight sync;
  };
  std::deque<Pending> in_flight_;
  Progress p_;
  double lr_ = 0;
  double eval_seconds_ = 0;             // all evaluations of this process: not training time
  int64_t last_checkpoint_round_ = -1;  // written or resumed from; -1: none
  int64_t eval_batches_done_ = 0;       // eval batches this rank computed (its share of each evaluation)
  int64_t grad_bytes_ = 0;
  std::vector<double> step_seconds_;
  StepProfiler profiler_;                         // train.profile_dir: a trace of a few inner steps
  StepPhases phases_;                             // the same steps as step_seconds_, phase by phase
  FaultHooks faults_;                             // PPU_TEST_FAULT: tests place faults at steps
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
  } catch (const LiveRecoveryGaveUp&) {
    throw;  // the coverage rules: gang restart from the last checkpoint (exit 3)
  } catch (const PeerError& e) {
    // Under live recovery a rank that lost the group (a blip, a store it could not reach, a
    // group it could not form) is replaced alone and rejoins; only the coverage rules restart
    // the gang.
    if (live) throw OutOfGroup(std::string("this rank lost the live group: ") + e.what());
    throw;
  }
}

}  // namespace ppu
