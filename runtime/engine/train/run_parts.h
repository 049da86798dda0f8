// RunParts: the parts of one rank's run that both of the trainer's stateful rooms work on
// (checkpoints.h saves and restores them, live_recovery.h shares them with replacements), by
// reference. The Run owns every part and outlives both rooms.
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
