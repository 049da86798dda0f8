// ppu-launch: runs K ranks of ppu-train on this machine, the way `torchrun --standalone` does.
// Each rank gets RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT (a free port unless
// given) and PPU_METRICS_PORT = metrics.port + rank when metrics are on. Their output lines
// are prefixed with "[rank r]". When one rank fails, the others are stopped (SIGTERM, then
// SIGKILL after a grace period) and ppu-launch exits with the failing rank's code.
// Before starting any rank it runs `ppu-train --check` once with the same config and
// WORLD_SIZE, so whatever a rank would reject (config for K, device, dtype, dataset) is
// reported once, with ppu-train's exit code, instead of K times.
// With network.recovery=live it first starts ppu-rendezvous on the port (the ranks get
// PPU_EXTERNAL_STORE=1), and a rank that fails does not stop the others: they go on without
// it. --max-restarts N (torchrun's flag) restarts failed ranks, at most N times in all: with
// live recovery a failed rank alone, in place (same RANK; it rejoins the group), except that
// exit 3 from the survivors (live recovery gave up) restarts the gang and the store; with
// recovery gang the whole gang, which resumes from its last checkpoint. Exit codes 2 and 4
// are never retried. A live job's store that exits is started again on its port (the ranks
// rebuild its keys, docs/RECOVERY.md), not counted as a restart. A live job that finished without a rank it could not
// restart (no restarts left) exits with that rank's code, not 0.
// SIGTERM or SIGINT to ppu-launch is a notice for the whole job: it is passed on to every rank
// (SIGTERM), which train on to the round boundary, save that round's checkpoint and exit
// (docs/RECOVERY.md, "Notices"); ppu-launch waits checkpoint.notice_s + 5 s for them, then
// SIGKILLs what is left, and exits 128 + the signal. A rank that fails otherwise makes it stop the
// others at once (SIGKILL: a gang that failed has nothing newer than its checkpoints to save).
// Live recovery: a rank stopped (SIGSTOP, a frozen VM) for longer than --kill-stopped-after
// (default 3 x network.heartbeat_s, at least 5 s) has been fenced by the group by then; it is
// SIGKILLed so that its replacement can start. The store is asked a request every
// network.heartbeat_s / 3 (at least 1 s) by one `ppu-rendezvous --probe --every` (StoreWatch):
// two requests in a row without an answer within max(1 s, network.heartbeat_s) (the ranks' own
// bound for the store's silence) make it a frozen store, which is SIGKILLed and started again
// like a store that exited.
// An elastic job (network.min_ranks > 0, docs/RESIZE.md): --nproc is its slots, --ranks K the
// ranks it starts with (slots 0 … K−1); SIGUSR1 grows it by one rank, SIGUSR2 shrinks it by one,
// within [network.min_ranks, --nproc] (cmd/elastic_launch.h). A vacant slot's process (one that
// retired, exit 0) is neither restarted nor counted lost.
// --rank-wrapper 'CMD ARGS' runs each rank as CMD ARGS ppu-train ... ({rank} in the template
// becomes the rank; split at spaces, no shell): numactl or taskset per rank, a network namespace
// per rank (`ip netns exec ns-{rank} env MASTER_ADDR=... GLOO_SOCKET_IFNAME=eth0`).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <csignal>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cmd/elastic_launch.h"
#include "cmd/store_watch.h"
#include "core/config.h"
#include "core/elastic_size.h"
#include "core/exit_status.h"
#include "core/job_contract.h"
#include "core/run_summary.h"

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_grow_asked = 0, g_shrink_asked = 0;  // SIGUSR1, SIGUSR2 so far

struct Child {
  int rank;
  pid_t pid;
  int out_fd;
  std::string pending;
  bool running = true;
  int code = 0;
  std::vector<std::string> args;                                       // to start it again
  std::optional<std::chrono::steady_clock::time_point> stopped_since;  // SIGSTOPped (WUNTRACED)
};

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error(std::string("cannot find a free port: ") + std::strerror(errno));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string default_trainer() {
  const auto self = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  for (const auto& candidate : {self / "ppu-train", self / "../engine/ppu-train"})
    if (std::filesystem::exists(candidate)) return std::filesystem::canonical(candidate).string();
  return "ppu-train";  // from PATH
}

std::string sibling(const std::string& binary, const std::string& name) {
  const auto dir = std::filesystem::path(binary).parent_path();
  return dir.empty() ? name : (dir / name).string();
}

// How every rank of this launch is started.
struct RankSetup {
  int world = 1, port = 0, metrics_port = 0;
  bool external_store = false;
  std::string trainer;
  std::string wrapper;      // --rank-wrapper's template
  std::string message_dir;  // each rank's termination message goes to <dir>/rank-<r>.message
};

std::string message_file(const RankSetup& s, int rank) {
  return s.message_dir + "/rank-" + std::to_string(rank) + ".message";
}

// Whether rank `rank`'s process left the message of a rank that retired (an elastic job shrank
// past its slot), rather than a finished rank's result.
bool retired(const RankSetup& s, int rank) {
  std::ifstream in(message_file(s, rank));
  std::string message((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ppu::contract::is_retired_message(message.c_str());
}

// The words of --rank-wrapper for `rank`: the template split at spaces, {rank} replaced.
std::vector<std::string> wrapper_words(const std::string& wrapper, int rank) {
  std::vector<std::string> words;
  std::istringstream in(wrapper);
  for (std::string w; in >> w; words.push_back(w))
    for (size_t at; (at = w.find("{rank}")) != std::string::npos;) w.replace(at, 6, std::to_string(rank));
  return words;
}

// Forks a child in its own process group with stdout and stderr on a pipe (the Child's
// out_fd); `exec` runs in the child and does not return.
Child fork_child(int rank, const std::vector<std::string>& args, const std::function<void()>& exec) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    exec();
    _exit(127);
  }
  close(fds[1]);
  return Child{rank, pid, fds[0], {}, true, 0, args, std::nullopt};
}

Child spawn(int rank, int world, int port, int metrics_port, const std::string& trainer,
            const std::vector<std::string>& args, bool check = false, bool external_store = false,
            const std::string& wrapper = "", const std::string& message_path = "") {
  return fork_child(rank, args, [&] {
    if (!message_path.empty()) setenv(ppu::contract::env::kTerminationLogPath, message_path.c_str(), 1);
    setenv(ppu::contract::env::kRank, std::to_string(rank).c_str(), 1);
    setenv(ppu::contract::env::kWorldSize, std::to_string(world).c_str(), 1);
    setenv(ppu::contract::env::kLocalRank, std::to_string(rank).c_str(), 1);
    setenv(ppu::contract::env::kMasterAddr, "127.0.0.1", 1);
    setenv(ppu::contract::env::kMasterPort, std::to_string(port).c_str(), 1);
    setenv(ppu::contract::env::kLogPrefixed, "1", 1);
    if (metrics_port > 0) setenv(ppu::contract::env::kMetricsPort, std::to_string(metrics_port + rank).c_str(), 1);
    if (external_store) setenv(ppu::contract::env::kExternalStore, "1", 1);
    const std::vector<std::string> prefix = wrapper_words(wrapper, rank);
    std::vector<char*> argv;
    argv.reserve(prefix.size() + args.size() + 3);
    for (const auto& w : prefix) argv.push_back(const_cast<char*>(w.c_str()));
    argv.push_back(const_cast<char*>(trainer.c_str()));
    if (check) argv.push_back(const_cast<char*>("--check"));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::cerr << "ppu-launch: cannot run " << argv[0] << ": " << std::strerror(errno) << "\n";
  });
}

Child spawn_rank(const RankSetup& s, int rank, const std::vector<std::string>& args) {
  if (!s.message_dir.empty()) std::remove(message_file(s, rank).c_str());  // the last process's
  return spawn(rank, s.world, s.port, s.metrics_port, s.trainer, args, false, s.external_store, s.wrapper,
               s.message_dir.empty() ? "" : message_file(s, rank));
}

// ppu-rendezvous on `port`, its output prefixed "[store]"; waits until it serves.
Child spawn_store(const std::string& binary, int port) {
  const std::string port_text = std::to_string(port);
  Child store = fork_child(-1, {}, [&] {
    execlp(binary.c_str(), binary.c_str(), "--port", port_text.c_str(), nullptr);
    std::cerr << "ppu-launch: cannot run " << binary << ": " << std::strerror(errno) << "\n";
  });
  std::string seen;
  char buf[512];
  for (ssize_t n; seen.find("serving") == std::string::npos && (n = read(store.out_fd, buf, sizeof buf)) > 0;)
    seen.append(buf, static_cast<size_t>(n));
  if (seen.find("serving") == std::string::npos)
    throw std::runtime_error(binary + " did not start serving on port " + std::to_string(port) + ": " + seen);
  std::cout << "[store] " << seen << std::flush;
  return store;
}

// Prints the child's complete lines with a rank prefix (or, with `capture`, collects all of
// its output there instead).
void forward_output(Child& c, bool flush, std::string* capture = nullptr) {
  char buf[4096];
  ssize_t n;
  while ((n = read(c.out_fd, buf, sizeof buf)) > 0) {
    c.pending.append(buf, static_cast<size_t>(n));
    if (!flush) break;
  }
  if (capture) {
    *capture += c.pending;
    c.pending.clear();
    return;
  }
  size_t nl;
  while ((nl = c.pending.find('\n')) != std::string::npos) {
    std::cout << (c.rank < 0 ? std::string("[store] ") : "[rank " + std::to_string(c.rank) + "] ")
              << c.pending.substr(0, nl + 1);
    c.pending.erase(0, nl + 1);
  }
  if (flush && !c.pending.empty()) {
    std::cout << (c.rank < 0 ? std::string("[store] ") : "[rank " + std::to_string(c.rank) + "] ") << c.pending << "\n";
    c.pending.clear();
  }
  std::cout.flush();
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Runs `trainer --check` as rank 0 of `world` (with the job's rendezvous env) and returns its
// exit code; its output goes to `output`.
int check_with_trainer(const std::string& trainer, int world, int port, const std::vector<std::string>& args,
                       std::string& output) {
  Child c = spawn(0, world, port, 0, trainer, args, /*check=*/true);  // --check opens no port
  forward_output(c, true, &output);
  int status = 0;
  waitpid(c.pid, &status, 0);
  close(c.out_fd);
  return exit_code(status);
}

// Sends `signal` to every running child's process group, waits up to `grace_seconds` for them
// (their output forwarded meanwhile), then SIGKILLs the rest.
void stop_all(std::vector<Child>& children, double grace_seconds, int signal = SIGTERM) {
  for (auto& c : children)
    if (c.running) kill(-c.pid, signal);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    bool any = false;
    for (auto& c : children) {
      if (!c.running) continue;
      int status;
      if (c.out_fd >= 0) forward_output(c, false);
      if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.running = false;
        c.code = exit_code(status);
      } else {
        any = true;
      }
    }
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& c : children)
    if (c.running) {
      kill(-c.pid, SIGKILL);
      int status;
      waitpid(c.pid, &status, 0);
      c.running = false;
      c.code = exit_code(status);
    }
}

void stop_all(Child& one, double grace_seconds) {
  std::vector<Child> v{one};
  stop_all(v, grace_seconds);
  one = v[0];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ppu-launch: run K ppu-train ranks on this machine"};
  int nproc = 0;
  int master_port = 0;
  int max_restarts = 0;
  int ranks = 0;
  std::string config_path, summary, summary_dir, trainer = default_trainer(), rendezvous, rank_wrapper;
  std::vector<std::string> overrides;
  double grace = 10;
  double kill_stopped_after = 0;
  app.add_option("--nproc", nproc, "number of ranks K (default: the config's `ranks`)")->check(CLI::PositiveNumber);
  app.add_option("--ranks", ranks,
                 "an elastic job (network.min_ranks): the ranks it starts with, slots 0..ranks-1 of --nproc; "
                 "SIGUSR1 / SIGUSR2 to ppu-launch grow / shrink it by one (default: --nproc)")
      ->check(CLI::PositiveNumber);
  app.add_option("--config", config_path, "YAML training config")->check(CLI::ExistingFile);
  app.add_option("--set", overrides, "override a config key: dotted.key=value (repeatable)");
  app.add_option("--master-port", master_port, "rendezvous port (default: a free port)")->check(CLI::Range(1, 65535));
  app.add_option("--summary", summary, "rank 0's JSON summary file");
  app.add_option("--summary-dir", summary_dir, "write every rank's summary to DIR/rank-<r>.json");
  app.add_option("--ppu-train", trainer, "path of the ppu-train binary");
  app.add_option("--ppu-rendezvous", rendezvous, "path of the ppu-rendezvous binary (default: beside ppu-train)");
  app.add_option("--max-restarts", max_restarts,
                 "restarts of failed ranks allowed in all: with network.recovery=live the failed rank alone, "
                 "else the gang (from its last checkpoint)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--grace-seconds", grace, "how long the store gets before SIGKILL when the job ends");
  app.add_option("--kill-stopped-after", kill_stopped_after,
                 "live recovery: SIGKILL a rank that has been stopped (SIGSTOP) this many seconds, so that it can be "
                 "replaced (default: 3 x network.heartbeat_s, at least 5)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rank-wrapper", rank_wrapper,
                 "run each rank as WRAPPER ppu-train ...: a command template split at spaces, {rank} replaced by "
                 "the rank (e.g. 'numactl --cpunodebind={rank}', 'ip netns exec ns-{rank}'); not for --check");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ppu::usage_exit_code(app.exit(e));
  }

  std::vector<Child> children;
  std::optional<Child> store;
  std::optional<ppu::ElasticLaunch> elastic;
  std::vector<std::string> rank_args;
  // A rank's flags: the job's, and its summary file.
  auto args_of = [&](int r) {
    std::vector<std::string> args = rank_args;
    if (!summary_dir.empty()) args.insert(args.end(), {"--summary", summary_dir + "/" + ppu::rank_summary_file(r)});
    else if (r == 0 && !summary.empty()) args.insert(args.end(), {"--summary", summary});
    return args;
  };
  RankSetup setup;
  bool live = false;
  double notice_grace = 0;   // how long ranks get to act on a notice: checkpoint.notice_s + 5
  double probe_every = 0;    // live: seconds between probes of the store
  double probe_timeout = 0;  // live: how long one probe waits for the store's answer
  try {
    // Validate before starting anything: a bad config is reported once, not K times.
    const ppu::Config config = ppu::load_config(config_path, overrides);
    if (nproc == 0) nproc = config.ranks;
    ppu::validate_config(config, nproc);
    if (master_port == 0) master_port = free_port();
    if (!summary_dir.empty()) std::filesystem::create_directories(summary_dir);
    live = config.network.recovery == ppu::Recovery::Live && nproc > 1;
    notice_grace = config.checkpoint.notice_s + 5;
    if (kill_stopped_after == 0)
      kill_stopped_after =
          config.network.heartbeat_s > 0 ? std::max(5.0, 3 * config.network.heartbeat_s) : config.network.timeout_s;
    probe_every = std::max(1.0, config.network.heartbeat_s / 3);
    probe_timeout = std::max(1.0, config.network.heartbeat_s);
    if (rendezvous.empty()) rendezvous = sibling(trainer, ppu::contract::kRendezvousBinary);
    setup = RankSetup{nproc, master_port, config.metrics.port, live, trainer, rank_wrapper, ""};
    elastic.emplace(rendezvous, master_port, nproc, live ? ppu::required_ranks(config, nproc) : nproc,
                    ranks == 0 ? nproc : ranks);
    if (elastic->elastic()) {  // where the ranks' termination messages say which of them retired
      std::string dir = (std::filesystem::temp_directory_path() / "ppu-launch-XXXXXX").string();
      if (mkdtemp(dir.data()) == nullptr) throw std::runtime_error("cannot create a directory under " + dir);
      setup.message_dir = dir;
    }

    if (!config_path.empty()) rank_args.insert(rank_args.end(), {"--config", config_path});
    for (const auto& o : overrides) rank_args.insert(rank_args.end(), {"--set", o});
    // What only ppu-train can check (device, dtype, dataset): asked once, before any rank runs.
    std::string check_output;
    const int check = check_with_trainer(trainer, nproc, master_port, rank_args, check_output);
    if (check != 0) {
      std::string last;  // ppu-train's one-line error is its last line
      for (size_t begin = 0; begin < check_output.size();) {
        size_t end = check_output.find('\n', begin);
        if (end == std::string::npos) end = check_output.size();
        if (end > begin) last = check_output.substr(begin, end - begin);
        begin = end + 1;
      }
      std::cerr << "ppu-launch: " << trainer << " --check (WORLD_SIZE=" << nproc << ") exited " << check
                << "; no rank was started: " << last << "\n";
      return check;
    }

    struct sigaction sa {};
    sa.sa_handler = [](int sig) { g_stop_signal = sig; };
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    struct sigaction resize {};
    resize.sa_handler = [](int sig) { ++(sig == SIGUSR1 ? g_grow_asked : g_shrink_asked); };
    resize.sa_flags = SA_RESTART;  // a resize signal interrupts no wait of ours
    sigaction(SIGUSR1, &resize, nullptr);
    sigaction(SIGUSR2, &resize, nullptr);

    if (live) store = spawn_store(rendezvous, master_port);
    if (elastic->elastic() && !elastic->tell_store())
      throw std::runtime_error("the job's store did not take its size (ppu-rendezvous --resize)");
    for (int r = 0; r < elastic->desired(); ++r) children.push_back(spawn_rank(setup, r, args_of(r)));
    std::cout << "[launch] started " << elastic->desired() << " ranks"
              << (elastic->elastic() ? " of " + std::to_string(nproc) + " slots (elastic)" : "")
              << ", rendezvous 127.0.0.1:" << master_port << (live ? " (ppu-rendezvous; live recovery)" : "")
              << std::endl;
  } catch (const std::exception& e) {  // core/exit_status.h's table
    const auto status = ppu::exit_status_of(e);
    std::cerr << "ppu-launch: " << status.message << "\n";
    stop_all(children, grace, SIGKILL);
    if (store) stop_all(*store, grace);
    return status.code;
  }

  using ppu::contract::OnExit;
  int result = 0, restarts = 0;
  std::vector<int> lost;  // live: ranks that failed and were not restarted
  int lost_code = 0;      // the first such rank's exit code
  auto stop_everything = [&] {
    stop_all(children, grace, SIGKILL);
    if (store) stop_all(*store, grace);
  };
  std::optional<ppu::StoreWatch> probe;
  std::sig_atomic_t grows_done = 0, shrinks_done = 0;  // SIGUSR1 and SIGUSR2 acted on
  if (live) probe.emplace(rendezvous, master_port, probe_every, probe_timeout);
  size_t running = children.size();
  while (running > 0) {
    std::vector<pollfd> fds;
    fds.reserve(children.size() + 1);
    for (auto& c : children) fds.push_back({c.out_fd, POLLIN, 0});
    if (store) fds.push_back({store->out_fd, POLLIN, 0});
    poll(fds.data(), fds.size(), 200);
    for (size_t i = 0; i < children.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP)) forward_output(children[i], false);
    if (store && (fds.back().revents & POLLIN)) forward_output(*store, false);
    // The store is supervised too: a live job's ranks rebuild a restarted store's keys
    // (LiveGroup), so it is started again at once, on the same port, without touching a rank.
    if (int status; store && waitpid(store->pid, &status, WNOHANG) == store->pid) {
      forward_output(*store, true);
      close(store->out_fd);
      std::cerr << "[launch] the rendezvous store exited with code " << exit_code(status)
                << ": restarting it (the ranks rebuild its keys)\n";
      try {
        store = spawn_store(rendezvous, master_port);
        if (probe) probe->restart();
        if (elastic->elastic()) elastic->tell_store();  // the new store has none of the old one's keys
      } catch (const std::exception& e) {
        store.reset();
        std::cerr << "ppu-launch: " << e.what() << ": stopping all ranks\n";
        stop_everything();
        result = 1;
        break;
      }
    }
    if (store && probe && probe->frozen()) {
      std::cerr << "[launch] the rendezvous store has not answered two probes in a row (" << probe->timeout()
                << " s each): it is frozen; ending it to start it again\n";
      kill(-store->pid, SIGKILL);  // reaped and started again above, at the next turn
    }
    if (g_stop_signal) {
      std::cerr << "[launch] signal " << g_stop_signal << ": a notice for the whole job, passed on to every rank "
                << "(they stop at the round boundary and save the job's state; " << notice_grace << " s at most)\n";
      stop_all(children, notice_grace, SIGTERM);
      if (store) stop_all(*store, grace);
      for (const auto& c : children) std::cerr << "[launch] rank " << c.rank << " exited with code " << c.code << "\n";
      result = 128 + g_stop_signal;
      break;
    }
    // Resizes asked since the last turn (SIGUSR1, SIGUSR2): a grown job's new slot starts now (its
    // process, if it is still on its way out of a retirement, once it has exited: below); a shrunk
    // job's highest slot retires at the job's next round boundary and exits 0.
    const int size_before = elastic->desired();
    for (; grows_done < g_grow_asked; ++grows_done) {
      const auto slot = elastic->grow();
      if (!slot) continue;
      auto it = std::find_if(children.begin(), children.end(), [&](const Child& c) { return c.rank == *slot; });
      if (it != children.end() && it->running) continue;
      if (it != children.end()) *it = spawn_rank(setup, *slot, it->args);
      else children.push_back(spawn_rank(setup, *slot, args_of(*slot)));
      ++running;
    }
    for (; shrinks_done < g_shrink_asked; ++shrinks_done) elastic->shrink();
    if (elastic->desired() != size_before) elastic->tell_store();
    const auto now = std::chrono::steady_clock::now();
    for (auto& c : children) {
      if (!c.running) continue;
      int status;
      const pid_t got = waitpid(c.pid, &status, WNOHANG | WUNTRACED | WCONTINUED);
      if (got == c.pid && WIFSTOPPED(status)) {
        c.stopped_since = now;
        continue;
      }
      if (got == c.pid && WIFCONTINUED(status)) {
        c.stopped_since.reset();
        continue;
      }
      if (got != c.pid) {
        // A stopped rank cannot end itself, and its replacement cannot start while it lives: the
        // group has fenced it (its heartbeat stopped with it) long before this.
        if (live && c.stopped_since && now - *c.stopped_since > std::chrono::duration<double>(kill_stopped_after)) {
          std::cerr << "[launch] rank " << c.rank << " has been stopped for more than " << kill_stopped_after
                    << " s (--kill-stopped-after): ending it so that it can be replaced\n";
          kill(-c.pid, SIGKILL);
          c.stopped_since.reset();
        }
        continue;
      }
      c.running = false;
      c.code = exit_code(status);
      --running;
      forward_output(c, true);
      close(c.out_fd);
      c.out_fd = -1;
      if (elastic->vacant(c.rank)) {  // retired (exit 0), or ended otherwise after the job shrank past it
        std::cerr << "[launch] rank " << c.rank << " exited with code " << c.code
                  << ": its slot is vacant (the job has " << elastic->desired() << " ranks)\n";
        continue;
      }
      if (c.code == 0 && elastic->elastic() && retired(setup, c.rank)) {
        // It retired at a boundary that saw a smaller size than the job has now (it grew back).
        std::cerr << "[launch] rank " << c.rank << " retired, but the job has " << elastic->desired()
                  << " ranks again: starting it again\n";
        elastic->tell_store();  // again: a write lost or overtaken would retire it at every boundary
        c = spawn_rank(setup, c.rank, c.args);
        ++running;
        continue;
      }
      const auto action = ppu::contract::on_exit(c.code, live);
      if (action == OnExit::Finished) continue;
      if (action == OnExit::RestartRank) {  // the others go on without it
        if (restarts < max_restarts) {
          ++restarts;
          std::cerr << "[launch] rank " << c.rank << " exited with code " << c.code << ": restarting it in place ("
                    << restarts << " of " << max_restarts << " restarts)\n";
          c = spawn_rank(setup, c.rank, c.args);
          ++running;
        } else {
          std::cerr << "[launch] rank " << c.rank << " exited with code " << c.code
                    << ": the other ranks go on without it (no restarts left)\n";
          lost.push_back(c.rank);
          if (lost_code == 0) lost_code = c.code;
        }
        continue;
      }
      if (action == OnExit::RestartGang && restarts < max_restarts) {  // the gang again, from its last checkpoint
        ++restarts;
        std::cerr << "[launch] rank " << c.rank << " exited with code " << c.code << ": restarting the gang ("
                  << restarts << " of " << max_restarts << " restarts)\n";
        stop_everything();
        for (auto& other : children)
          if (other.out_fd >= 0) close(other.out_fd);
        if (store) {
          close(store->out_fd);
          store = spawn_store(rendezvous, master_port);
        }
        children.erase(std::remove_if(children.begin(), children.end(),
                                      [&](const Child& other) { return elastic->vacant(other.rank); }),
                       children.end());
        if (elastic->elastic()) elastic->tell_store();
        for (auto& other : children) other = spawn_rank(setup, other.rank, other.args);
        running = children.size();
        lost.clear();
        lost_code = 0;
        break;
      }
      if (result == 0) {
        result = c.code;
        std::cerr << "[launch] rank " << c.rank << " exited with code " << c.code << ": stopping the other ranks\n";
        stop_everything();
        running = 0;
      }
    }
  }
  for (auto& c : children)
    if (c.out_fd >= 0) {
      forward_output(c, true);
      close(c.out_fd);
    }
  if (store) stop_all(*store, grace);
  if (!setup.message_dir.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(setup.message_dir, ignored);
  }
  if (result == 0 && lost.empty()) {
    std::cout << "[launch] all " << children.size() << " ranks finished" << std::endl;
  } else if (result == 0) {
    // The job's θ is complete, but a rank was lost for good: not a clean success.
    std::cout << "[launch] the job finished without rank(s)";
    for (int r : lost) std::cout << " " << r;
    std::cout << " (failed, not restarted): exiting with the first one's code " << lost_code << std::endl;
    result = lost_code;
  }
  return result;
}
