#include "engine/state/checkpoint_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/atomic_file.h"
#include "common/fnv1a.h"
#include "data/token_shard.h"
#include "engine/state/checkpoint_format.h"
#include "engine/state/checkpoint_location.h"
#include "engine/state/round_manifest.h"
#include "objstore/s3_url.h"

namespace fs = std::filesystem;

namespace ppu {

namespace {

namespace file = checkpoint_file;
using file::kGlobal;
using file::kManifest;

std::string serialize(torch::serialize::OutputArchive& archive) {
  std::ostringstream os;
  archive.save_to(os);
  return os.str();
}

std::string serialize(const ArchiveWriter& writer) {
  torch::serialize::OutputArchive archive;
  writer(archive);
  return serialize(archive);
}

std::string serialize(const CheckpointStore::Writer& part) { return serialize(part(TensorCopy::Shared)); }

// The part as it is now, built and serialised when the upload thread asks for its bytes: the
// training thread only copies the tensors.
CheckpointUploader::Bytes snapshot(const CheckpointStore::Writer& part) {
  return CheckpointUploader::Bytes::later([writer = part(TensorCopy::Cloned)] { return serialize(writer); });
}

std::string checksum(const std::string& bytes) { return hex64(fnv1a64(bytes.data(), bytes.size())); }

// Reads `name` of round directory `round_dir` and checks it against the manifest; "" when fine.
std::string verify(CheckpointLocation& at, const std::string& round_dir, const nlohmann::json& manifest,
                   const std::string& name, std::string& bytes) {
  if (!manifest["files"].contains(name)) return "manifest does not list " + name;
  try {
    auto read = at.read(round_dir + "/" + name);
    if (!read) return name + " is missing";
    bytes = std::move(*read);
  } catch (const std::exception& e) {
    return e.what();
  }
  const auto& entry = manifest["files"][name];
  if (bytes.size() != entry["bytes"].get<size_t>())
    return name + " has " + std::to_string(bytes.size()) + " bytes, manifest says " +
           std::to_string(entry["bytes"].get<size_t>());
  if (checksum(bytes) != entry["fnv1a64"].get<std::string>()) return name + " fails its checksum";
  return "";
}

// The manifest of a round, written last as its commit: nullopt when there is none (a save that
// did not finish: readers skip it, never reject it).
std::optional<std::string> manifest_of(CheckpointLocation& at, const std::string& round_dir) {
  return at.read(round_dir + "/" + kManifest);
}

}  // namespace

VerifiedCheckpointFile read_verified_checkpoint_file(const std::string& dir, const std::string& name, int64_t round,
                                                     const S3Service& service) {
  if (!S3Url::is_s3(dir) && !fs::is_directory(dir))
    throw NoValidCheckpoint("checkpoint directory '" + dir + "' does not exist");
  const auto at = CheckpointLocation::checked(dir, "--checkpoint", service);
  auto rounds = at->rounds();
  if (round >= 0) {
    if (std::find(rounds.begin(), rounds.end(), round) == rounds.end())
      throw NoValidCheckpoint("checkpoint directory '" + dir + "' has no " + file::round_dir(round));
    rounds = {round};
  }
  std::string rejected;
  for (const int64_t r : rounds) {
    const std::string round_dir = file::round_dir(r);
    const std::string path = at->path(round_dir);
    VerifiedCheckpointFile out;
    out.round = r;
    out.path = path;
    std::string problem;
    nlohmann::json manifest;
    try {
      const auto text = manifest_of(*at, round_dir);
      if (!text) {
        spdlog::info("ignoring {}: no manifest, a checkpoint whose save did not finish", path);
        continue;
      }
      manifest = nlohmann::json::parse(*text);
      out.config_yaml = manifest.at("config").get<std::string>();
      out.world_size = manifest.at("world_size").get<int>();
    } catch (const std::exception& e) {
      problem = std::string("no readable manifest (") + e.what() + ")";
    }
    if (problem.empty()) problem = verify(*at, round_dir, manifest, name, out.bytes);
    if (problem.empty()) {
      require_checkpoint_format(manifest.value("format", 1), "checkpoint " + path);
      return out;
    }
    rejected += "\n  " + round_dir + ": " + problem;
  }
  throw NoValidCheckpoint(
      "checkpoint directory '" + dir + "' has no valid checkpoint" +
      (rejected.empty() ? std::string(" (no round-* directory whose save finished)") : ":" + rejected));
}

namespace {

bool in_background(const std::string& where, CheckpointUpload upload) {
  return upload == CheckpointUpload::Background || (upload == CheckpointUpload::Auto && S3Url::is_s3(where));
}

}  // namespace

CheckpointStore::CheckpointStore(const std::string& where, const CheckpointConfig& config, Collectives& collectives)
    : location_(CheckpointLocation::open(where, "checkpoint.dir", S3Service::of(config))),
      dir_(location_->text()),
      keep_(config.keep),
      collectives_(collectives) {
  if (!in_background(where, config.upload)) return;
  // The thread's own connection (one S3 client serves one thread at a time), whose requests
  // give up within the round's bound.
  CheckpointUploader::Settings settings;
  settings.job_rank = collectives.job_rank();
  settings.keep = config.keep;
  settings.max_in_flight = config.max_in_flight;
  settings.round_timeout_s = config.write_timeout_s;
  settings.exit_drain_s = std::min(config.write_timeout_s, config.notice_s);
  uploader_ = std::make_unique<CheckpointUploader>(
      CheckpointLocation::open(where, "checkpoint.dir", S3Service::of(config), std::min(60.0, config.write_timeout_s)),
      settings);
}

CheckpointStore::~CheckpointStore() = default;

std::string CheckpointStore::round_dir(int64_t round) const { return location_->path(file::round_dir(round)); }

std::string CheckpointStore::rank_file() const { return file::rank_part(collectives_.job_rank()); }

bool CheckpointStore::save(int64_t round, const Writer& rank_part, const std::vector<StandIn>& stand_ins,
                           const Writer& global_part, const std::string& config_yaml) {
  const std::string dir = round_dir(round), name = file::round_dir(round);
  // Per job rank, what this member wrote of it: {written, bytes, checksum, failed}; all-gathered,
  // so the group's rank 0 learns every part from the member that wrote it, and whether any
  // member failed to (fixed width: K x 4).
  const int ranks = collectives_.job_size();
  auto info = torch::zeros({ranks, 4}, torch::kInt64);
  const auto start = std::chrono::steady_clock::now();
  auto write = [&](int job_rank, const Writer& writer) {
    const std::string bytes = serialize(writer);
    location_->write(name + "/" + file::rank_part(job_rank), bytes);
    written_.bytes += static_cast<double>(bytes.size());
    info[job_rank][0] = 1;
    info[job_rank][1] = static_cast<int64_t>(bytes.size());
    info[job_rank][2] = static_cast<int64_t>(fnv1a64(bytes.data(), bytes.size()));
  };
  std::string error;  // this member's failed write
  try {
    write(collectives_.job_rank(), rank_part);
    for (const auto& s : stand_ins) write(s.job_rank, s.part);
  } catch (const std::runtime_error& e) {  // filesystem_error too
    error = e.what();
    info[collectives_.job_rank()][3] = 1;
  }
  const auto all = collectives_.allgather(info);
  bool failed = false;
  for (const auto& member : all)
    failed = failed || member.index({torch::indexing::Slice(), 3}).sum().item<int64_t>() > 0;
  auto written = torch::tensor({int64_t{0}}, torch::kInt64);
  if (collectives_.rank() == 0) {
    try {
      if (!failed) {
        written_.bytes += publish(round, all, global_part, config_yaml);
        written[0] = 1;
      }
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    if (written[0].item<int64_t>() == 0) {
      try {
        location_->remove_round(round);  // room on a full disk; without a manifest it is never loaded anyway
      } catch (const std::exception&) {
      }
    }
  }
  collectives_.broadcast(written, 0);
  if (!error.empty()) spdlog::warn("checkpoint round {}: this rank could not write to {}: {}", round, dir_, error);
  written_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (error.empty()) ++written_.rounds_written;
  return written[0].item<int64_t>() != 0;
}

// The group's rank 0, once every part is written: the global part, then the manifest that
// makes the round a checkpoint, then retention.
double CheckpointStore::publish(int64_t round, const std::vector<torch::Tensor>& all, const Writer& global_part,
                                const std::string& config_yaml) {
  const int ranks = collectives_.job_size();
  const std::string name = file::round_dir(round);
  const std::string global = serialize(global_part);
  location_->write(name + "/" + kGlobal, global);
  std::map<int, PartRecord> parts;
  for (int m = 0; m < static_cast<int>(all.size()); ++m) {
    const int by = collectives_.members().empty() ? m : collectives_.members()[m];
    for (int r = 0; r < ranks; ++r) {
      const auto v = all[m][r];
      if (v[0].item<int64_t>() == 0) continue;
      const PartRecord part{v[1].item<int64_t>(), static_cast<uint64_t>(v[2].item<int64_t>()), by};
      if (!parts.emplace(r, part).second)
        throw std::logic_error("checkpoint round " + std::to_string(round) + ": two members wrote " +
                               file::rank_part(r));
    }
  }
  const int rank0 = collectives_.members().empty() ? 0 : collectives_.members()[0];
  const std::string manifest = round_manifest(round, ranks, config_yaml, PartRecord::of(global, rank0), parts);
  location_->write(name + "/" + kManifest, manifest);
  prune_rounds(*location_, keep_, round);
  return static_cast<double>(global.size() + manifest.size());
}

bool CheckpointStore::save_in_background(int64_t round, const Writer& rank_part, const std::vector<StandIn>& stand_ins,
                                         const Writer& global_part, const std::string& config_yaml, bool wait_for_room,
                                         double room_bound_s, std::optional<bool> room) {
  if (wait_for_room || !room) {
    if (wait_for_room) uploader_->wait_for_room(room_bound_s);
    auto busy = torch::tensor({static_cast<int64_t>(uploader_->full() ? 1 : 0)}, torch::kInt64);
    collectives_.allreduce_sum(busy);
    room = busy.item<int64_t>() == 0;
  }
  if (!*room) return false;
  CheckpointUploader::Round r;
  r.round = round;
  r.parts.push_back({collectives_.job_rank(), snapshot(rank_part)});
  for (const auto& s : stand_ins) r.parts.push_back({s.job_rank, snapshot(s.part)});
  if (collectives_.rank() == 0) {
    std::vector<int> members = collectives_.members();
    if (members.empty())
      for (int m = 0; m < collectives_.world_size(); ++m) members.push_back(m);
    r.commit =
        CheckpointUploader::Commit{snapshot(global_part), std::move(members), collectives_.job_size(), config_yaml};
  }
  uploader_->enqueue(std::move(r));
  return true;
}

void CheckpointStore::write_note(const char* name, const std::string& text) const {
  if (collectives_.rank() != 0) return;
  try {
    location_->write(name, text);
  } catch (const std::exception& e) {
    spdlog::warn("could not write {} in {}: {}", name, dir_, e.what());
  }
}

std::optional<std::string> CheckpointStore::rewrite_note(const char* name,
                                                         const std::function<std::string()>& text) const {
  if (collectives_.rank() != 0) return std::nullopt;
  if (uploader_) {  // written by the upload thread, never holding the round boundary up
    uploader_->set_note(name, text());
    return std::nullopt;
  }
  try {
    location_->write(name, text(), Durability::Readers);
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

std::optional<std::string> CheckpointStore::read_note(const char* name) const {
  try {
    return location_->read(name);
  } catch (const std::exception& e) {
    spdlog::warn("{} is unreadable: {}", location_->path(name), e.what());
    return std::nullopt;
  }
}

std::optional<LoadedCheckpoint> CheckpointStore::load_latest(bool start_over_if_unusable) {
  // Rank 0's listing decides the candidates, so every rank walks the same sequence.
  auto rounds = location_->rounds();
  auto count = torch::tensor({static_cast<int64_t>(collectives_.rank() == 0 ? rounds.size() : 0)}, torch::kInt64);
  collectives_.allreduce_sum(count);
  auto list = torch::zeros({std::max<int64_t>(1, count.item<int64_t>())}, torch::kInt64);
  if (collectives_.rank() == 0)
    for (size_t i = 0; i < rounds.size(); ++i) list[i] = rounds[i];
  collectives_.allreduce_sum(list);

  std::vector<std::pair<std::string, std::string>> rejected;  // (DIR, why), newest first
  std::vector<int64_t> rejected_rounds;
  for (int64_t i = 0; i < count.item<int64_t>(); ++i) {
    const auto round = list[i].item<int64_t>();
    const std::string dir = round_dir(round), name = file::round_dir(round);
    std::optional<std::string> manifest_text;
    std::string problem;
    try {
      manifest_text = manifest_of(*location_, name);
    } catch (const std::exception& e) {
      problem = std::string("no readable manifest (") + e.what() + ")";
    }
    auto written = torch::tensor({static_cast<int64_t>(manifest_text || !problem.empty() ? 1 : 0)}, torch::kInt64);
    collectives_.allreduce_sum(written);
    if (written.item<int64_t>() != collectives_.world_size()) {
      spdlog::info("ignoring {}: no manifest, a checkpoint whose save did not finish", dir);
      continue;
    }
    std::string mine, global;
    nlohmann::json manifest;
    try {
      if (problem.empty()) manifest = nlohmann::json::parse(*manifest_text);
      if (problem.empty() && manifest.at("world_size").get<int>() != collectives_.job_size())
        problem = "it was written by " + std::to_string(manifest["world_size"].get<int>()) + " ranks, this run has " +
                  std::to_string(collectives_.job_size());
    } catch (const std::exception& e) {
      problem = std::string("no readable manifest (") + e.what() + ")";
    }
    if (problem.empty()) problem = verify(*location_, name, manifest, rank_file(), mine);
    if (problem.empty()) problem = verify(*location_, name, manifest, kGlobal, global);
    auto ok = torch::tensor({static_cast<int64_t>(problem.empty() ? 1 : 0)}, torch::kInt64);
    collectives_.allreduce_sum(ok);
    if (ok.item<int64_t>() != collectives_.world_size()) {
      if (problem.empty()) problem = "another rank rejected it";
      spdlog::warn("skipping checkpoint {}: {}", dir, problem);
      rejected.emplace_back(dir, problem);
      rejected_rounds.push_back(round);
      continue;
    }
    // Intact on every rank (the same manifest everywhere, so every rank decides alike): one of
    // another format stops the job rather than letting it start over beside its old state.
    require_checkpoint_format(manifest.value("format", 1), "checkpoint " + dir);
    LoadedCheckpoint loaded;
    loaded.round = round;
    loaded.path = dir;
    std::istringstream rank_in(mine), global_in(global);
    loaded.rank_part.load_from(rank_in);
    loaded.global_part.load_from(global_in);
    return loaded;
  }
  if (rejected.empty()) return std::nullopt;  // a new run: nothing was ever checkpointed here
  std::string all;
  for (const auto& [dir, why] : rejected) all += (all.empty() ? "" : "; ") + dir + ": " + why;
  if (start_over_if_unusable) {
    spdlog::warn(
        "every checkpoint in {} is unusable ({}); starting from step 0 as checkpoint.start_over_if_unusable "
        "asks: they are removed",
        dir_, all);
    // Removed, not left beside the new rounds: a stale higher round would otherwise outlive
    // the pruning and be the first candidate of the next resume.
    if (collectives_.rank() == 0)
      for (const int64_t round : rejected_rounds) location_->remove_round(round);
    collectives_.barrier();
    return std::nullopt;
  }
  throw CheckpointError("every checkpoint in " + dir_ + " is unusable: " + all +
                        ". Nothing was loaded or changed; repair or move them, or set "
                        "checkpoint.start_over_if_unusable=true to train from step 0 and replace them");
}

}  // namespace ppu
