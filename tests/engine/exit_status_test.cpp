// The runtime's error types each take their exit code from the kind they derive from
// (core/exit_status.h): a peer's death restarts the gang (3), unusable data or checkpoints fail
// the job at once (4), whatever the binary that meets them.
#include <gtest/gtest.h>

#include "core/job_contract.h"
#include "data/token_shard.h"
#include "engine/comm/collectives.h"
#include "engine/state/checkpoint_format.h"

namespace ec = ppu::contract::exit_code;

TEST(ExitStatus, RuntimeErrorsMapToTheirContractCodes) {
  EXPECT_EQ(ppu::exit_status_of(ppu::PeerError("rank 3 closed the connection")).code, ec::kPeerFailure);
  const auto shard = ppu::exit_status_of(ppu::data::ShardError("dataset 'd': train.bin is missing"));
  EXPECT_EQ(shard.code, ec::kDataError);
  EXPECT_EQ(shard.message, "data error: dataset 'd': train.bin is missing");
  const auto ckpt = ppu::exit_status_of(ppu::CheckpointError("round-000002: no outer state"));
  EXPECT_EQ(ckpt.code, ec::kDataError);
  EXPECT_EQ(ckpt.message, "checkpoint error: round-000002: no outer state");
  EXPECT_EQ(ppu::exit_status_of(ppu::CheckpointFormatError("format 1")).code, ec::kDataError);
}
