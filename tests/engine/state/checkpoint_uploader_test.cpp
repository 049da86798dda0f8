// CheckpointUploader (checkpoint.upload background) and round_manifest.h, on real directories:
// two uploaders on one directory stand for two ranks of a job (the group's rank 0 commits from the
// other's receipt). One fake, GatedLocation, holds writes until a test lets them go.
#include "engine/state/checkpoint_uploader.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/checkpoint_names.h"
#include "engine/state/checkpoint_store.h"
#include "engine/state/round_manifest.h"

namespace fs = std::filesystem;
namespace file = ppu::checkpoint_file;

namespace {

class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() /
              ("ppu-uploader-" + std::to_string(::getpid()) + "-" + std::to_string(next_++))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }

 private:
  static inline int next_ = 0;
  fs::path path_;
};

ppu::CheckpointUploader::Settings settings(int job_rank, double timeout_s = 30, int keep = 3, int in_flight = 1) {
  ppu::CheckpointUploader::Settings s;
  s.job_rank = job_rank;
  s.keep = keep;
  s.max_in_flight = in_flight;
  s.round_timeout_s = timeout_s;
  s.exit_drain_s = 1;
  return s;
}

std::unique_ptr<ppu::CheckpointUploader> uploader(const TempDir& dir, ppu::CheckpointUploader::Settings s) {
  return std::make_unique<ppu::CheckpointUploader>(ppu::CheckpointLocation::open(dir.str(), "test"), s);
}

// Round `round` of a 2-rank job as job rank `rank` hands it over (rank 0 with the commit).
ppu::CheckpointUploader::Round round_of(int64_t round, int rank) {
  ppu::CheckpointUploader::Round r;
  r.round = round;
  r.parts.push_back({rank, "part of rank " + std::to_string(rank) + " at round " + std::to_string(round)});
  if (rank == 0) r.commit = ppu::CheckpointUploader::Commit{"global " + std::to_string(round), {0, 1}, 2, "steps: 7\n"};
  return r;
}

bool has_manifest(const TempDir& dir, int64_t round) {
  return fs::exists(fs::path(dir.str()) / file::round_dir(round) / file::kManifest);
}

// A directory whose writes wait until release() (a slow or unreachable store).
class GatedLocation : public ppu::CheckpointLocation {
 public:
  explicit GatedLocation(const std::string& dir) : dir_(ppu::CheckpointLocation::open(dir, "test")) {}
  void release() {
    {
      const std::lock_guard lock(mutex_);
      open_ = true;
    }
    changed_.notify_all();
  }
  std::string text() const override { return dir_->text(); }
  std::string path(const std::string& name) const override { return dir_->path(name); }
  void write(const std::string& name, const std::string& bytes, ppu::Durability d) override {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return open_; });
    dir_->write(name, bytes, d);
  }
  std::optional<std::string> read(const std::string& name) override { return dir_->read(name); }
  std::vector<int64_t> rounds() override { return dir_->rounds(); }
  std::vector<std::string> names(const std::string& dir) override { return dir_->names(dir); }
  void remove_round(int64_t round) override { dir_->remove_round(round); }

 private:
  std::unique_ptr<ppu::CheckpointLocation> dir_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
};

}  // namespace

TEST(CheckpointUploader, CommitsARoundOnceEveryMembersReceiptIsThere) {
  TempDir dir;
  auto rank0 = uploader(dir, settings(0));
  auto rank1 = uploader(dir, settings(1));
  rank0->enqueue(round_of(4, 0));
  EXPECT_FALSE(rank0->drain(0.5)) << "committed without rank 1's part";
  EXPECT_FALSE(has_manifest(dir, 4));
  rank1->enqueue(round_of(4, 1));
  ASSERT_TRUE(rank0->drain(10));
  ASSERT_TRUE(rank1->drain(10));
  EXPECT_EQ(rank0->committed(), 4);
  EXPECT_EQ(rank1->committed(), 4) << "rank 1 saw the manifest";
  EXPECT_TRUE(rank0->take_failed().empty());
  // A reader verifies every file against the manifest the receipts made.
  const auto part = ppu::read_verified_checkpoint_file(dir.str(), file::rank_part(1));
  EXPECT_EQ(part.round, 4);
  EXPECT_EQ(part.bytes, "part of rank 1 at round 4");
  EXPECT_EQ(part.world_size, 2);
  EXPECT_EQ(ppu::read_verified_checkpoint_file(dir.str(), file::kGlobal).bytes, "global 4");
  EXPECT_EQ(rank1->stats().rounds_written, 1);
  EXPECT_GT(rank1->stats().bytes, 0);
}

TEST(CheckpointUploader, AMissingReceiptGivesTheRoundUpAtItsDeadline) {
  TempDir dir;
  auto rank0 = uploader(dir, settings(0, 0.5));
  rank0->enqueue(round_of(2, 0));
  ASSERT_TRUE(rank0->drain(10));
  EXPECT_EQ(rank0->committed(), -1);
  EXPECT_EQ(rank0->take_failed(), std::vector<int64_t>{2});
  EXPECT_TRUE(rank0->take_failed().empty()) << "each given-up round is taken once";
  EXPECT_FALSE(has_manifest(dir, 2));
  EXPECT_THROW(ppu::read_verified_checkpoint_file(dir.str(), file::kGlobal), ppu::NoValidCheckpoint);
}

TEST(CheckpointUploader, AReceiptThatSaysAPartFailedGivesTheRoundUpAtOnce) {
  TempDir dir;
  auto rank0 = uploader(dir, settings(0, 600));
  ppu::Receipt failed;
  failed.writer = 1;
  failed.failed = "No space left on device";
  ppu::CheckpointLocation::open(dir.str(), "test")->write(file::round_dir(3) + "/" + file::receipt(1), failed.text());
  rank0->enqueue(round_of(3, 0));
  ASSERT_TRUE(rank0->drain(10)) << "waited for the deadline (600 s) instead";
  EXPECT_EQ(rank0->take_failed(), std::vector<int64_t>{3});
  EXPECT_FALSE(has_manifest(dir, 3));
}

TEST(CheckpointUploader, ANewerRoundCommittedFirstSupersedesAnOlderOneWaiting) {
  TempDir dir;
  auto rank0 = uploader(dir, settings(0, 600, 3, 2));
  auto rank1 = uploader(dir, settings(1, 600));
  rank0->enqueue(round_of(5, 0));  // rank 1 never writes round 5 (it was lost meanwhile)
  rank0->enqueue(round_of(6, 0));
  rank1->enqueue(round_of(6, 1));
  ASSERT_TRUE(rank0->drain(10)) << "round 5 held the drain although round 6 was committed";
  EXPECT_EQ(rank0->committed(), 6);
  EXPECT_TRUE(rank0->take_failed().empty()) << "a superseded round is not a failed one";
  EXPECT_FALSE(fs::exists(fs::path(dir.str()) / file::round_dir(5))) << "retention removes the unfinished round";
}

TEST(CheckpointUploader, RetentionKeepsTheNewestCommittedRounds) {
  TempDir dir;
  auto rank0 = uploader(dir, settings(0, 30, 2));
  auto rank1 = uploader(dir, settings(1, 30, 2));
  for (int64_t r = 1; r <= 4; ++r) {
    rank1->enqueue(round_of(r, 1));
    rank0->enqueue(round_of(r, 0));
    ASSERT_TRUE(rank0->drain(10));
  }
  EXPECT_EQ(ppu::CheckpointLocation::open(dir.str(), "test")->rounds(), (std::vector<int64_t>{4, 3}));
}

TEST(CheckpointUploader, IsFullWhileMaxInFlightRoundsAreBeingWritten) {
  TempDir dir;
  auto gated = std::make_unique<GatedLocation>(dir.str());
  GatedLocation* gate = gated.get();
  ppu::CheckpointUploader rank1(std::move(gated), settings(1, 30, 3, 1));
  EXPECT_FALSE(rank1.full());
  rank1.enqueue(round_of(1, 1));
  EXPECT_TRUE(rank1.full()) << "one round in flight, max_in_flight 1";
  EXPECT_FALSE(rank1.drain(0.2));
  gate->release();
  // Its part and receipt written, it looks for the manifest: no longer holding memory.
  for (int i = 0; i < 100 && rank1.full(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(rank1.full());
}

TEST(RoundManifest, ListsEveryPartAndTheStandInsAndRefusesAGap) {
  const ppu::PartRecord global = ppu::PartRecord::of("g", 0);
  std::map<int, ppu::PartRecord> parts{{0, ppu::PartRecord::of("a", 0)}, {1, ppu::PartRecord::of("bb", 0)}};
  const auto manifest = nlohmann::json::parse(ppu::round_manifest(9, 2, "x: 1\n", global, parts));
  EXPECT_EQ(manifest["round"], 9);
  EXPECT_EQ(manifest["files"][file::rank_part(1)]["bytes"], 2);
  EXPECT_EQ(manifest["stand_ins"]["1"], 0) << "rank 0 wrote rank 1's part";
  EXPECT_FALSE(manifest["stand_ins"].contains("0"));
  parts.erase(1);
  EXPECT_THROW(ppu::round_manifest(9, 2, "", global, parts), std::logic_error);
}

TEST(RoundManifest, AReceiptReadsBackAsWritten) {
  ppu::Receipt r;
  r.writer = 3;
  r.parts[3] = ppu::PartRecord::of("abc", 3);
  r.parts[7] = ppu::PartRecord::of("defg", 3);
  const auto back = ppu::Receipt::parse(r.text());
  EXPECT_EQ(back.writer, 3);
  ASSERT_EQ(back.parts.size(), 2U);
  EXPECT_EQ(back.parts.at(7).bytes, 4);
  EXPECT_EQ(back.parts.at(7).checksum, r.parts[7].checksum);
  EXPECT_TRUE(back.failed.empty());
  EXPECT_THROW(ppu::Receipt::parse("{\"parts\": 1}"), std::runtime_error);
}
