// ElasticLaunch: ppu-launch's side of resizing a running live job (docs/RESIZE.md). The job has
// --nproc slots; its desired size K (--ranks) keeps slots 0 … K−1 filled. SIGUSR1 asks for one
// rank more, SIGUSR2 for one fewer, within [network.min_ranks, --nproc]; each size is told to the
// job's store (`ppu-rendezvous --resize`), where the members read it at their next round
// boundary: a grown job's new slot is started here and joins as a replacement does, a shrunk
// job's highest slot retires there (exit 0). The size is told again after the store restarts (it
// lost its keys). A slot at or above K is vacant: its process is neither restarted nor lost.
// Contract: nothing here throws after construction; a store that does not take a size is said on
// stderr, and the size is told again at the next change or restart.
#pragma once

#include <optional>
#include <string>

namespace ppu {

class ElasticLaunch {
 public:
  // `required`: network.min_ranks (or `slots` when the job is not elastic); `desired`: --ranks.
  // ConfigError (naming --ranks) when `desired` is outside [required, slots], or when it differs
  // from `slots` for a job that is not elastic.
  ElasticLaunch(std::string rendezvous, int port, int slots, int required, int desired);

  bool elastic() const { return required_ < slots_; }
  int desired() const { return desired_; }
  bool vacant(int slot) const { return slot >= desired_; }

  // Writes the desired size into the store (ppu-rendezvous --resize, up to a few seconds);
  // whether the store took it.
  bool tell_store() const;
  // One rank more: the slot to start, or none (at --nproc already, or not elastic: said why).
  // The caller tells the store once it has taken every signal of its turn (tell_store): sizes on
  // the way (several signals in a row) are not told, so no boundary retires a rank for them.
  std::optional<int> grow();
  // One rank fewer (its process retires at the job's next round boundary): whether the size
  // changed (at network.min_ranks already, or not elastic: said why). The caller tells the store.
  bool shrink();

 private:
  std::string rendezvous_;
  int port_, slots_, required_, desired_;
};

}  // namespace ppu
