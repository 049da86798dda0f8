// FaultHooks: test-only faults that a process test places at a chosen step, for the faults a
// signal cannot make (the chaos bench and tests/engine/live_recovery_tests.py use it).
// PPU_TEST_FAULT = "<kind>:<rank>:<step>[:<ms>][,...]", read once; kinds:
//   hang   the training thread of job rank <rank> stops for good before inner step <step>
//          (the process, its heartbeat thread and its sockets stay up: a hung training thread)
//   flip   one element of that rank's global θ changes before inner step <step> (a flipped
//          bit, a bug): the θ check before the next sync must find and repair it
//   stop   that rank's process stops itself (SIGSTOP) before inner step <step>: a frozen VM at a
//          chosen point of a round, every thread of it (the heartbeat's too) until a SIGCONT
//   late   that rank's training thread sleeps <ms> before inner step <step>: before a round's
//          last step, it holds the others in the outer sync's first collective for that long
//          (a test places a second fault while they wait)
//   slow   that rank's training thread sleeps <ms> before every inner step from <step> on (a
//          straggler: a slower machine, a noisy neighbour; quorum sync's tests)
//   stall-checkpoint  that rank's first checkpoint write at or after inner step <step> stalls for
//          good (an NFS or FUSE mount that stops answering): checkpoint.write_timeout_s bounds it
//   die-forming  that rank's process SIGKILLs itself just before it forms generation <step> (or a
//          later one) of the live group, after the others listed it: a second loss inside the
//          survivors' forming, which they must give up on within a heartbeat window
// Only a process that starts with the job takes a fault: a replacement (a later process of the
// same rank) does not, so a hang is not repeated after the rank is replaced. Unset: nothing.
// PPU_TEST_FAULT_TRIGGER = <dir>, for faults placed at run time (bench/chaos): before every inner
// step, the process of rank r that removes the file <dir>/hang-<r> hangs its training thread
// as `hang` does; at every checkpoint write, the one that removes <dir>/stall-checkpoint-<r>
// stalls that write as `stall-checkpoint` does; one file, one fault, replacement or not.
// PPU_TEST_STEP_PAUSE_MS = <ms>: every process (replacements too) sleeps that long before each
// inner step, so that a test whose fault and recovery take seconds of wall time has a run that
// outlasts them on any CPU, however fast (a floor on the run's length, not a fault).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ppu {

class FaultHooks {
 public:
  // `replacement`: this process rejoins a running job (it takes no fault).
  FaultHooks(int job_rank, bool replacement);
  // Before inner step `step`: carries out a fault placed there (a hang never returns);
  // `flip_theta` changes this rank's θ.
  void before_step(int64_t step, const std::function<void()>& flip_theta) const;
  // Before a checkpoint write at inner step `step`: a stall-checkpoint placed at or before it
  // never returns.
  void before_checkpoint_write(int64_t step) const;
  // Before this rank forms generation `generation` of the live group: a die-forming placed at
  // or before it kills the process.
  void before_forming(int64_t generation) const;

 private:
  struct Fault {
    std::string kind;
    int64_t step;
    int64_t ms = 0;  // late's and slow's
  };
  std::vector<Fault> faults_;  // this rank's
  int rank_;
  std::string trigger_;        // PPU_TEST_FAULT_TRIGGER's <dir>/hang-<rank>, or empty
  std::string stall_trigger_;  // its <dir>/stall-checkpoint-<rank>, or empty
  int pause_ms_ = 0;           // PPU_TEST_STEP_PAUSE_MS
};

}  // namespace ppu
