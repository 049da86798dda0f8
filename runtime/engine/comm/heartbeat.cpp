#include "engine/comm/heartbeat.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "engine/comm/beat_board.h"
#include "engine/comm/store_clients.h"

namespace ppu {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Added to a rank's counter when it leaves: a value this large means "finished", not "alive".
constexpr int64_t kLeft = int64_t{1} << 48;
// Ranks leave the rendezvous seconds apart on a loaded machine (each forms its K-rank Gloo mesh
// in its own time): a peer that has not beaten yet has this many windows from this monitor's
// start. (K = 32 ranks on 2 cores, heartbeat_s 1: the last ranks began beating over a second
// after the first, and were reported.)
constexpr int kStartupWindows = 3;
// Board reads since a peer last moved before its silence counts: this rank's own late beats (a
// starved CPU, a slow store) are missing evidence, not the peer's silence.
constexpr int kLooks = 4;

}  // namespace

struct Heartbeat::Shared {
  RendezvousInfo info;
  std::chrono::milliseconds window, interval;
  OnLost on_lost;
  std::atomic<const ProgressClock*> progress{nullptr};  // published after on_hung
  OnHung on_hung;
  std::atomic<const Announce*> announce{nullptr};  // published once set
  Announce announce_fn;
  bool hung = false;  // the beater's own: on_hung ran
  std::string prefix;
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false, leaving = false, keep_watching = false;
  std::vector<bool> silent;                 // per rank, under mutex
  std::vector<Clock::time_point> welcomed;  // per rank, under mutex: when the group last took it in
  std::atomic<bool> reported{false};
  std::atomic<bool> started{false};     // start(): the threads exist from construction, idle until then
  std::atomic<Clock::rep> answered{0};  // when the store last answered (Clock ticks)
  std::promise<void> beater_done;

  std::string board_key() const { return live_keys::beat_board(prefix); }
  std::atomic<int64_t> requests{0};  // store requests of the beater (requests())
  void report(const Lost& lost) {
    if (!reported.exchange(true)) on_lost(lost);
  }
  void set_silent(int rank, bool value) {
    std::lock_guard<std::mutex> lock(mutex);
    silent[rank] = value;
  }
  // keep_watching: whether `rank`, whose counter last moved at `moved`, falls silent now (once per
  // silence). Its silence counts from its welcome if that came later; both under one lock, so that
  // a welcome between the two is never undone.
  bool falls_silent(int rank, Clock::time_point& moved, Clock::time_point now) {
    std::lock_guard<std::mutex> lock(mutex);
    moved = std::max(moved, welcomed[rank]);
    if (silent[rank] || now - moved <= window) return false;
    silent[rank] = true;
    return true;
  }
  // Sleeps one interval; false once stopped.
  bool pause() {
    std::unique_lock<std::mutex> lock(mutex);
    return !wake.wait_for(lock, interval, [this] { return stop; });
  }
};

Heartbeat::Heartbeat(const RendezvousInfo& info, std::chrono::milliseconds window, OnLost on_lost,
                     const std::string& key_prefix, bool keep_watching, bool start_now) {
  if (info.world_size < 2 || window.count() <= 0) return;
  shared_ = std::make_shared<Shared>();
  shared_->keep_watching = keep_watching;
  shared_->silent.assign(info.world_size, false);
  shared_->welcomed.assign(info.world_size, Clock::time_point());
  shared_->info = info;
  shared_->window = window;
  shared_->interval = std::max(window / 5, std::chrono::milliseconds(50));
  shared_->on_lost = std::move(on_lost);
  shared_->prefix = key_prefix;
  // The threads exist from here, whatever start_now says: they are the process's control plane
  // and keep the priority of the thread that constructs this (before it yields the CPU:
  // yield_cpu_to_control_plane), not of a later caller of start().
  beater_ = std::thread([s = shared_] {
    while (!s->started)
      if (!s->pause()) {
        s->beater_done.set_value();
        return;
      }
    beat(s);
  });
  watchdog_ = std::thread([s = shared_] {
    auto tick = Clock::now();
    bool store_silent = false;
    while (s->pause()) {
      const auto now = Clock::now();
      if (!s->started || now - tick > s->window / 2)  // not started yet, or this process was stopped
        s->answered = now.time_since_epoch().count();
      tick = now;
      const auto silent = now - Clock::time_point(Clock::duration(s->answered.load()));
      if (silent > s->window) {
        if (!s->keep_watching) {
          s->report(Lost{-1, seconds(silent)});
          return;
        }
        if (!store_silent) s->on_lost(Lost{-1, seconds(silent)});  // once per silence
        store_silent = true;
      } else {
        store_silent = false;
      }
    }
  });
  if (start_now) start();
}

void Heartbeat::watch_progress(const ProgressClock& clock, OnHung on_hung) {
  if (!shared_ || shared_->progress.load()) return;
  shared_->on_hung = std::move(on_hung);
  shared_->progress.store(&clock, std::memory_order_release);
}

void Heartbeat::announce_with(Announce announce) {
  if (!shared_ || shared_->announce.load()) return;
  shared_->announce_fn = std::move(announce);
  shared_->announce.store(&shared_->announce_fn, std::memory_order_release);
}

void Heartbeat::start() {
  if (!shared_ || shared_->started) return;
  shared_->answered = Clock::now().time_since_epoch().count();
  shared_->started = true;
}

Heartbeat::~Heartbeat() { stop(false); }

void Heartbeat::leave() { stop(true); }

void Heartbeat::welcome(const std::vector<int>& ranks) {
  if (!shared_) return;
  const auto now = Clock::now();
  std::lock_guard<std::mutex> lock(shared_->mutex);
  for (int r : ranks) {
    shared_->welcomed.at(r) = now;
    shared_->silent.at(r) = false;
  }
}

int64_t Heartbeat::requests() const { return shared_ ? shared_->requests.load() : 0; }

bool Heartbeat::silent(int rank) const {
  if (!shared_) return false;
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->silent.at(rank);
}

void Heartbeat::stop(bool leaving) {
  if (!shared_) return;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stop = true;
    shared_->leaving = shared_->leaving || leaving;
  }
  shared_->wake.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (!beater_.joinable()) return;
  // A beater blocked on a store that never answers is left behind (it owns its state).
  if (shared_->beater_done.get_future().wait_for(shared_->window) == std::future_status::ready) beater_.join();
  else beater_.detach();
}

std::string Heartbeat::describe(const Lost& lost) {
  std::ostringstream out;
  out.precision(3);
  if (lost.rank < 0)
    out << "the rendezvous store has not answered for " << lost.silent_s << " s (its host is stopped, lost or down)";
  else
    out << "rank " << lost.rank << " has sent no heartbeat for " << lost.silent_s
        << " s (stopped, hung, or its host lost)";
  return out.str();
}

void Heartbeat::beat(const std::shared_ptr<Shared>& s) {
  const auto& info = s->info;
  const auto start = Clock::now();
  // Peers' last counter value (0: not beaten yet), when it last moved (for one not beaten yet,
  // kStartupWindows - 1 windows after `start`), and this rank's looks at the board since.
  std::vector<int64_t> last(info.world_size, 0);
  std::vector<Clock::time_point> moved(info.world_size, start + (kStartupWindows - 1) * s->window);
  std::vector<int> looks(info.world_size, 0);
  c10::intrusive_ptr<c10d::TCPStore> store;
  std::string seen;  // the board as this rank last saw it
  auto tick = start;
  do {
    try {
      if (!store) {  // its own connection: the training thread's may be blocked in a collective
        c10d::TCPStoreOptions opts;
        opts.port = static_cast<std::uint16_t>(info.master_port);
        opts.isServer = false;
        opts.waitWorkers = false;
        // The watchdog, not this timeout, decides silence; LibTorch 1.13 counts a connect's
        // timeout in whole seconds (below 1 s it gives up at once).
        opts.timeout = std::max<std::chrono::milliseconds>(s->window, std::chrono::seconds(10));
        store = c10::make_intrusive<c10d::TCPStore>(info.master_addr, opts);
      }
      int64_t requests = 0;
      std::optional<std::vector<int64_t>> beats;
      const ProgressClock* progress = s->progress.load(std::memory_order_acquire);
      if (progress && progress->stalled()) {
        // This rank's training thread is hung: no more beats, so the peers fence it; then end it.
        if (!s->hung) {
          s->hung = true;
          // Said before the silence, so that the peers that fence this rank name the fault.
          const std::string hung = "hung";
          store->set(live_keys::self_report(info.rank), std::vector<uint8_t>(hung.begin(), hung.end()));
          ++requests;
          s->on_hung(progress->idle_seconds());
        }
        const std::string key = s->board_key();
        ++requests;
        if (store->check({key})) {
          const auto board = store->get(key);
          ++requests;
          beats = beat_board::parse(std::string(board.begin(), board.end()), info.world_size);
        } else {
          beats = beat_board::parse("", info.world_size);
        }
      } else {
        beats = beat_board::bump(*store, s->board_key(), info.rank, info.world_size, 1, seen, requests);
      }
      if (const Announce* announce = s->announce.load(std::memory_order_acquire)) requests += (*announce)(*store);
      s->requests += requests;
      const auto now = Clock::now();
      s->answered = now.time_since_epoch().count();
      // Stopped ourselves for longer than the window: the peers' silence is not theirs.
      if (now - tick > s->window) std::fill(moved.begin(), moved.end(), now);
      tick = now;
      // A beat that kept losing the race to other ranks' beats tells nothing of the peers.
      for (int r = 0; beats && r < info.world_size; ++r) {
        if (r == info.rank) continue;
        const int64_t value = (*beats)[r];
        if (value >= kLeft) continue;  // finished
        if (value != last[r]) {
          last[r] = value;
          moved[r] = now;
          looks[r] = 0;
          if (s->keep_watching) s->set_silent(r, false);
        } else if (++looks[r] < kLooks) {
          continue;
        } else if (s->keep_watching) {
          if (s->falls_silent(r, moved[r], now)) s->on_lost(Lost{r, seconds(now - moved[r])});
        } else if (now - moved[r] > s->window) {
          s->report(Lost{r, seconds(now - moved[r])});
          s->beater_done.set_value();
          return;
        }
      }
    } catch (const std::exception&) {
      // Reconnect next time; the watchdog reports a store that stays silent.
      if (store) retire_store_client(std::exchange(store, {}));
    }
  } while (s->pause());
  bool leaving = false;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    leaving = s->leaving;
  }
  if (leaving && store) {
    try {
      int64_t requests = 0;
      beat_board::bump(*store, s->board_key(), info.rank, info.world_size, kLeft, seen, requests);
    } catch (const std::exception&) {  // peers will see it silent, as if lost: the job is ending anyway
    }
  }
  if (store) retire_store_client(std::move(store));
  s->beater_done.set_value();
}

}  // namespace ppu
