// RunParts: the parts of one rank's run that the trainer's rooms work on (checkpoints.h saves
// and restores them, live_recovery.h shares them with replacements, outer_syncs.h and
// theta_guard.h count into the progress, the recovery block and the metrics), by reference. The
// Run owns every part and outlives every room.
#pragma once

#include "core/run_summary.h"
#include "data/data_loader.h"
#include "engine/obs/rank_metrics.h"
#include "engine/optim/inner_optimizer.h"
#include "engine/optim/outer_optimizer.h"
#include "engine/train/progress.h"

namespace ppu {

struct RunParts {
  InnerOptimizer& inner;
  OuterOptimizer& outer;
  data::RankLoader& loader;
  RankMetrics& metrics;
  RunProgress& progress;
  RecoverySummary& recovery;  // the summary's recovery block: faults, fallback, degraded rounds
};

}  // namespace ppu
