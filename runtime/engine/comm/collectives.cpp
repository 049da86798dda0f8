#include "engine/comm/collectives.h"

#include "common/env.h"
#include "core/elastic_size.h"
#include "core/exit_status.h"
#include "core/job_contract.h"
#include "engine/comm/live_store_keys.h"
#include "engine/comm/store_clients.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef PPU_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <optional>
#include <thread>
#include <utility>

namespace ppu {

namespace {

bool is_loopback(const std::string& host) { return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1"; }

// The group's timeout bounds its connection; every operation passes its own.
c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> gloo_options(std::chrono::milliseconds connect_timeout,
                                                                 const std::string& master_addr) {
  auto gloo = c10d::ProcessGroupGloo::Options::create(connect_timeout);
  // Bind Gloo to loopback for local runs; otherwise to the interface of this host's name
  // (a pod's IP), unless GLOO_SOCKET_IFNAME names one.
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  else if (is_loopback(master_addr))
    gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  else gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  return gloo;
}

}  // namespace

// Holds the NCCL group by its concrete type, like the Gloo one (a Backend in 2.x, a
// ProcessGroup in 1.13). Empty shell without NCCL so that the header needs no #ifdef.
class NcclGroup {
 public:
#ifdef PPU_WITH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group;
#endif
};

RendezvousInfo rendezvous_from_env() {
  RendezvousInfo info;
  info.rank = env_int(contract::env::kRank, 0);
  info.world_size = env_int(contract::env::kWorldSize, 1);
  info.master_addr = env_string(contract::env::kMasterAddr, info.master_addr);
  info.master_port = env_int(contract::env::kMasterPort, contract::kRendezvousPort);
  info.external_store = env_string(contract::env::kExternalStore, "") == "1";
  if (info.world_size < 1)
    throw std::invalid_argument("WORLD_SIZE must be >= 1, got " + std::to_string(info.world_size));
  if (info.rank < 0 || info.rank >= info.world_size)
    throw std::invalid_argument("RANK=" + std::to_string(info.rank) +
                                " is outside [0, WORLD_SIZE=" + std::to_string(info.world_size) + ")");
  if (info.master_port <= 0 || info.master_port > 65535)
    throw std::invalid_argument("MASTER_PORT=" + std::to_string(info.master_port) + " is not a TCP port");
  return info;
}

int nccl_group_device(const torch::Device& device, int world_size, bool live_recovery) {
  if (!device.is_cuda() || world_size == 1 || live_recovery) return -1;
  const int local_world = env_int("LOCAL_WORLD_SIZE", world_size);
  return local_world <= static_cast<int>(torch::cuda::device_count()) ? device.index() : -1;
}

Collectives::Collectives(const RendezvousInfo& info, std::chrono::milliseconds timeout, int nccl_device)
    : info_(info), timeout_(timeout) {
  members_ = {info.rank};
  if (info.world_size == 1) return;
  try {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<std::uint16_t>(info.master_port);
    opts.isServer = info.rank == 0 && !info.external_store;
    if (!info.external_store) opts.numWorkers = static_cast<std::size_t>(info.world_size);
    opts.waitWorkers = !info.external_store;
    opts.timeout = timeout;
    store_ = c10::make_intrusive<c10d::TCPStore>(info.master_addr, opts);
    // An external store outlives a gang: its first group has its own generation's keys, and
    // once that group exists (LiveGroup records its members) a process of the job is a
    // replacement, which joins a later generation instead.
    if (info.external_store) {
      if (is_replacement()) {
        joining_ = true;
        return;
      }
      std::vector<int> first(first_size_);
      for (int r = 0; r < static_cast<int>(first.size()); ++r) first[r] = r;
      reform(first, 0);
    } else {
      form(store_, info.rank, info.world_size);
      members_.resize(info.world_size);
      for (int r = 0; r < info.world_size; ++r) members_[r] = r;
    }
#ifdef PPU_WITH_NCCL
    if (nccl_device >= 0) {
      // Own key space in the store, so NCCL's unique-id exchange cannot meet Gloo's keys.
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>("nccl", store_);
      auto nccl_opts = c10d::ProcessGroupNCCL::Options::create();
      nccl_opts->timeout = timeout;
      nccl_ = std::make_unique<NcclGroup>();
      nccl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, info.rank, info.world_size, nccl_opts);
    }
#else
    (void)nccl_device;
#endif
  } catch (const PeerError&) {
    throw;
  } catch (const std::exception& e) {
    throw PeerError("rendezvous at " + info.master_addr + ":" + std::to_string(info.master_port) + " as rank " +
                    std::to_string(info.rank) + " of " + std::to_string(info.world_size) + " failed: " + e.what());
  }
}

int Collectives::first_group_size() {
  if (!store_->check({live_keys::kDesiredRanks})) return info_.world_size;
  const auto bytes = store_->get(live_keys::kDesiredRanks);
  const std::string text(bytes.begin(), bytes.end());
  const std::optional<int> desired = parse_desired(text);
  if (!desired)
    throw ConfigError("the rendezvous store's desired size (" + std::string(live_keys::kDesiredRanks) + ") is '" +
                      text + "', not a number of ranks");
  return std::min(*desired, info_.world_size);
}

bool Collectives::is_replacement() {
  // The marker exists from the moment generation 0 formed, and generation 0 cannot form without
  // this process: a marker seen now means another process of this rank was in it. An elastic
  // job's first group is the slots below its desired size (live_keys::kDesiredRanks); a process
  // of a slot above it is started only to grow the job, once that group exists.
  // The size is read again at each look: a supervisor that writes it just after the store started
  // (the operator's store reads it from a file) is heard; once the first group's slots have all
  // checked in, one size is decided for every rank (compare-and-set), and a rank above it is a
  // replacement of a slot the job grew into.
  store_->set(live_keys::kStartedPrefix + std::to_string(info_.rank), std::vector<uint8_t>{1});
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    if (store_->check({live_keys::kFirstGroup})) return true;
    const int first = first_group_size();
    std::vector<std::string> everyone;
    everyone.reserve(first);
    for (int r = 0; r < first; ++r) everyone.push_back(live_keys::kStartedPrefix + std::to_string(r));
    if (info_.rank < first && store_->check(everyone)) {
      const std::string size = std::to_string(first);
      const auto decided =
          store_->compareSet(live_keys::kFirstGroupSize, {}, std::vector<uint8_t>(size.begin(), size.end()));
      first_size_ = std::stoi(std::string(decided.begin(), decided.end()));
      return info_.rank >= first_size_;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::string missing;
      for (int r = 0; r < first; ++r)
        if (!store_->check({everyone[r]})) missing += (missing.empty() ? "" : ",") + std::to_string(r);
      throw PeerError("rank(s) [" + missing + "] of the job did not start within the timeout (" +
                      std::to_string(timeout_.count() / 1000) + " s), and no live group of this job exists");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Collectives::form(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
  const ProgressClock::Waiting waiting(progress_);  // Gloo's constructor waits for every member
  group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size,
                                                       gloo_options(connect_timeout(), info_.master_addr));
  rank_ = rank;
  world_size_ = size;
}

namespace {

// Drops a group this rank no longer uses on a thread of its own: its destructor waits for work
// still in flight (a collective blocked on a peer that is gone ends at Gloo's timeout), which no
// caller may wait for. Kept for the process's life instead, every re-formation left K - 1
// sockets, Gloo's threads and a store connection open: a long job on spot capacity ran out of
// descriptors.
void retire_group(c10::intrusive_ptr<c10d::ProcessGroupGloo> group) {
  std::thread([g = std::move(group)]() mutable { g.reset(); }).detach();
}

// A group being formed on a thread of its own, over a store connection of its own: Gloo's wait
// for a member's address holds the connection it asks through, which must not be the one the
// rank's other requests share. A group abandoned (a member fell silent meanwhile) that completes
// later is left to the process's exit, as is the connection: the group's destructor would wait
// for the members that are gone, the client's for its watcher (store_clients.h).
struct Forming {
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  c10::intrusive_ptr<c10d::Store> connection;
  Forming() = default;
  Forming(const Forming&) = delete;
  Forming& operator=(const Forming&) = delete;
  ~Forming() {
    (void)group.release();
    if (connection) retire_store_client(std::move(connection));
  }
};

}  // namespace

void Collectives::reform(const std::vector<int>& members, int64_t generation,
                         const std::function<std::string()>& give_up) {
  const auto me = std::find(members.begin(), members.end(), info_.rank);
  if (me == members.end() || !std::is_sorted(members.begin(), members.end()))
    throw std::logic_error("reform: the members must be ascending and include this rank");
  if (before_reform_) before_reform_(generation);
  if (narrowed()) use(std::exchange(whole_, {}));
  for (auto& [set, narrow] : narrow_groups_) retire_group(std::move(narrow.gloo));
  narrow_groups_.clear();
  generation_ = generation;
  if (group_) retire_group(std::exchange(group_, {}));
  sequence_ = 0;
  {
    // From here a report that one of the new members is lost abandons the forming itself.
    std::lock_guard<std::mutex> lock(abort_mutex_);
    members_ = members;
    abortable_ = true;
    aborted_ = false;
    abort_reason_.clear();
  }
  const std::string what = "forming generation " + std::to_string(generation);
  auto forming = std::make_shared<Forming>();
  const int rank = static_cast<int>(me - members.begin());
  const int size = static_cast<int>(members.size());
  try {
    forming->connection = connect_store();
    wait_abortably(
        what.c_str(),
        [forming, rank, size, options = gloo_options(connect_timeout(), info_.master_addr),
         store =
             c10::make_intrusive<c10d::PrefixStore>(live_keys::of_generation(generation, "pg"), forming->connection)] {
          forming->group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
        },
        give_up);
  } catch (const PeerError&) {
    throw;  // abandoned, or no connection to the store
  } catch (const std::exception& e) {
    throw PeerError(what + " failed: " + e.what());
  }
  group_ = std::move(forming->group);  // leaves it empty: ~Forming releases nothing
  rank_ = rank;
  world_size_ = size;
}

Collectives::Group Collectives::take_current() {
  Group g;
  g.gloo = std::exchange(group_, {});
  g.rank = rank_;
  g.size = world_size_;
  g.members = members_;
  g.sequence = sequence_;
  return g;
}

void Collectives::use(Group group) {
  group_ = std::move(group.gloo);
  rank_ = group.rank;
  world_size_ = group.size;
  sequence_ = group.sequence;
  std::lock_guard<std::mutex> lock(abort_mutex_);
  members_ = std::move(group.members);
}

void Collectives::narrow(const std::vector<int>& members) {
  if (members == members_) return;
  if (abortable_) throw std::logic_error("narrow: not in a re-formable group (live recovery)");
  const auto& whole = narrowed() ? whole_.members : members_;
  const auto me = std::find(members.begin(), members.end(), info_.rank);
  if (me == members.end() || !std::is_sorted(members.begin(), members.end()) ||
      !std::includes(whole.begin(), whole.end(), members.begin(), members.end()))
    throw std::logic_error("narrow: the members must be ascending members of the group, this rank among them");
  // Put the group in use away: the whole group's aside, a narrowed one back among the others.
  if (narrowed()) {
    auto current = take_current();
    auto key = current.members;
    narrow_groups_[std::move(key)] = std::move(current);
  } else {
    whole_ = take_current();
  }
  if (members == whole_.members) {
    use(std::exchange(whole_, {}));
    return;
  }
  auto found = narrow_groups_.find(members);
  if (found == narrow_groups_.end()) {
    std::string set;
    for (int r : members) set += (set.empty() ? "" : ",") + std::to_string(r);
    Group g;
    g.rank = static_cast<int>(me - members.begin());
    g.size = static_cast<int>(members.size());
    g.members = members;
    try {
      const ProgressClock::Waiting waiting(progress_);  // Gloo's constructor waits for every member
      auto prefixed =
          c10::make_intrusive<c10d::PrefixStore>("ppu/narrow/g" + std::to_string(generation_) + "/" + set, store());
      g.gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, g.rank, g.size,
                                                           gloo_options(connect_timeout(), info_.master_addr));
    } catch (const std::exception& e) {
      use(std::exchange(whole_, {}));
      throw PeerError("forming the group of ranks [" + set + "] failed: " + e.what());
    }
    found = narrow_groups_.emplace(members, std::move(g)).first;
  }
  use(std::move(found->second));
  narrow_groups_.erase(found);
}

void Collectives::set_connect_timeout(std::chrono::milliseconds timeout) {
  connect_timeout_ = timeout;
  if (store_) store_->setTimeout(timeout);
}

void Collectives::abort_for(int job_rank, const std::string& why) {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  if (std::find(members_.begin(), members_.end(), job_rank) == members_.end()) return;
  if (!aborted_) abort_reason_ = why;
  aborted_ = true;
}

bool Collectives::is_member(int job_rank) const {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  return std::find(members_.begin(), members_.end(), job_rank) != members_.end();
}

void Collectives::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  if (!aborted_) abort_reason_ = why;
  aborted_ = true;
}

c10::intrusive_ptr<c10d::Store> Collectives::store() const {
  std::lock_guard<std::mutex> lock(store_mutex_);
  return store_;
}

void Collectives::reconnect_store() {
  auto fresh = connect_store();
  std::lock_guard<std::mutex> lock(store_mutex_);
  retire_store_client(std::exchange(store_, fresh));
}

c10::intrusive_ptr<c10d::Store> Collectives::connect_store() const {
  const auto timeout = connect_timeout();
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(info_.master_port);
  opts.isServer = false;
  opts.waitWorkers = false;
  // One short attempt (LibTorch 1.13 counts a connect's timeout in whole seconds, and its
  // retries can miss a store that came back meanwhile): the caller retries.
  opts.timeout = std::chrono::seconds(1);
  try {
    auto fresh = c10::make_intrusive<c10d::TCPStore>(info_.master_addr, opts);
    fresh->setTimeout(std::max<std::chrono::milliseconds>(timeout, std::chrono::seconds(1)));
    return fresh;
  } catch (const std::exception& e) {
    throw PeerError("reconnecting to the rendezvous store at " + info_.master_addr + ":" +
                    std::to_string(info_.master_port) + " failed: " + e.what());
  }
}

bool Collectives::has_group() const {
  if (group_) return true;
  // One rank alone: every collective is the identity. Otherwise this rank has no group now (a
  // replacement before it joins, a re-formation that failed): a collective must not pass as one.
  if (info_.world_size > 1) throw PeerError("rank " + std::to_string(info_.rank) + " is in no group of the job");
  return false;
}

Collectives::~Collectives() {
  // A re-formable group this rank leaves without re-forming it (fenced while cut off: the others
  // never complete the collective it posted last) may hold work stuck on a peer that is gone
  // for good (a lost node never answers, not even with a reset): its destructor would wait for
  // that work until Gloo's timeout, and a finished rank would not exit for minutes. It is left
  // to the process's exit, as are the groups retired before still closing (retire_group).
  if (abortable_ && group_) (void)group_.release();
  if (store_) retire_store_client(std::move(store_));  // its watcher may be parked (store_clients.h)
}

void Collectives::wait(const char* what, const std::function<void()>& op) {
  const ProgressClock::Waiting waiting(progress_);
  try {
    op();
  } catch (const PeerError&) {
    throw;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    if (auto nl = msg.find('\n'); nl != std::string::npos) msg.resize(nl);
    throw PeerError(std::string(what) + " failed (a peer died or timed out after " +
                    std::to_string(timeout_.count() / 1000) + " s): " + msg);
  }
}

void Collectives::start(const char* what, const std::function<void()>& post) {
  if (abortable_ && aborted_) {
    std::lock_guard<std::mutex> reason(abort_mutex_);
    throw PeerError(std::string(what) + " not started: " + abort_reason_);
  }
  wait(what, post);
}

void Collectives::wait_for(const char* what, const c10::intrusive_ptr<c10d::Work>& work) {
  if (!abortable_) return wait(what, [&] { work->wait(timeout_); });
  // Gloo's send/recv works never report completion to a poll: their wait runs on the thread.
  wait(what, [&] { wait_abortably(what, [work, timeout = timeout_] { work->wait(timeout); }); });
}

void Collectives::wait_abortably(const char* what, std::function<void()> blocking,
                                 const std::function<std::string()>& give_up) {
  const ProgressClock::Waiting waiting(progress_);
  // Gloo's waits cannot be interrupted: a detached thread runs `blocking` (until Gloo's own
  // timeout at worst, holding what it captured), while this one also watches abort().
  struct Waiting {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::exception_ptr error;
  };
  auto state = std::make_shared<Waiting>();
  std::thread([blocking = std::move(blocking), state] {
    std::exception_ptr error;
    try {
      blocking();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(state->mutex);
    state->error = error;
    state->done = true;
    state->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mutex);
  const auto began = std::chrono::steady_clock::now();
  auto probed = began;
  while (!state->done_cv.wait_for(lock, std::chrono::milliseconds(2), [&] { return state->done; })) {
    if ((abort_probe_ || give_up) && std::chrono::steady_clock::now() - probed > std::chrono::milliseconds(50)) {
      probed = std::chrono::steady_clock::now();
      if (auto why = abort_probe_ ? abort_probe_(probed - began) : std::string(); !why.empty()) abort(why);
      if (auto why = give_up ? give_up() : std::string(); !why.empty()) abort(why);
    }
    if (aborted_) {
      std::lock_guard<std::mutex> reason(abort_mutex_);
      throw PeerError(std::string(what) + " abandoned: " + abort_reason_);
    }
  }
  if (state->error) std::rethrow_exception(state->error);
}

Collectives::Pending Collectives::allreduce_sum_async(torch::Tensor& tensor) {
  if (!has_group()) return [] {};
  c10d::AllreduceOptions opts;
  opts.reduceOp = c10d::ReduceOp::SUM;
  opts.timeout = timeout_;
  c10::intrusive_ptr<c10d::Work> work;
#ifdef PPU_WITH_NCCL
  if (nccl_ && tensor.is_cuda() && !narrowed()) {
    std::vector<torch::Tensor> tensors{tensor};
    start("all-reduce", [&] { work = nccl_->group->allreduce(tensors, opts); });
    return [this, work] { wait("all-reduce", [&] { work->wait(timeout_); }); };
  }
#endif
  // Gloo gets host tensors only (its CUDA paths differ between versions and builds): a CUDA
  // tensor is reduced through a host copy and copied back when the caller waits.
  const bool staged = !tensor.device().is_cpu();
  std::vector<torch::Tensor> tensors{staged ? tensor.to(torch::kCPU) : tensor};
  start("all-reduce", [&] { work = group_->allreduce(tensors, opts); });
  return [this, work, tensors, staged, tensor]() mutable {
    wait_for("all-reduce", work);
    if (staged) tensor.copy_(tensors[0]);
  };
}

std::vector<torch::Tensor> Collectives::allgather(const torch::Tensor& tensor) {
  std::vector<torch::Tensor> out;
  allgather_async(tensor, out)();
  return out;
}

Collectives::Pending Collectives::allgather_async(const torch::Tensor& tensor, std::vector<torch::Tensor>& out) {
  if (!has_group()) {
    out = {tensor};
    return [] {};
  }
  auto outputs = std::make_shared<std::vector<std::vector<torch::Tensor>>>(1);
  for (int r = 0; r < world_size_; ++r) (*outputs)[0].push_back(torch::empty_like(tensor));
  std::vector<torch::Tensor> inputs{tensor};
  c10::intrusive_ptr<c10d::Work> work;
  start("all-gather", [&] {
    c10d::AllgatherOptions opts;
    opts.timeout = timeout_;
    work = group_->allgather(*outputs, inputs, opts);
  });
  return [this, work, outputs, &out] {
    wait_for("all-gather", work);
    out = (*outputs)[0];
  };
}

Collectives::Pending Collectives::send(torch::Tensor& tensor, int dst, int tag) {
  if (!group_) throw std::logic_error("send needs a process group (WORLD_SIZE > 1)");
  std::vector<torch::Tensor> tensors{tensor};
  c10::intrusive_ptr<c10d::Work> work;
  start("send", [&] { work = group_->send(tensors, dst, tag); });
  return [this, work] { wait_for("send", work); };
}

Collectives::Pending Collectives::recv(torch::Tensor& tensor, int src, int tag) {
  if (!group_) throw std::logic_error("recv needs a process group (WORLD_SIZE > 1)");
  std::vector<torch::Tensor> tensors{tensor};
  c10::intrusive_ptr<c10d::Work> work;
  start("receive", [&] { work = group_->recv(tensors, src, tag); });
  return [this, work] { wait_for("receive", work); };
}

void Collectives::barrier() {
  if (!has_group()) return;
  c10::intrusive_ptr<c10d::Work> work;
  start("barrier", [&] {
    c10d::BarrierOptions opts;
    opts.timeout = timeout_;
    work = group_->barrier(opts);
  });
  wait_for("barrier", work);
}

void Collectives::broadcast(torch::Tensor& tensor, int root) {
  if (!has_group()) return;
  std::vector<torch::Tensor> tensors{tensor};
  c10::intrusive_ptr<c10d::Work> work;
  start("broadcast", [&] {
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    opts.timeout = timeout_;
    work = group_->broadcast(tensors, opts);
  });
  wait_for("broadcast", work);
}

}  // namespace ppu
