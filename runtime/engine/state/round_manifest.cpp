#include "engine/state/round_manifest.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/fnv1a.h"
#include "core/checkpoint_names.h"
#include "engine/state/checkpoint_format.h"

namespace ppu {

namespace file = checkpoint_file;

PartRecord PartRecord::of(const std::string& content, int writer) {
  return {static_cast<int64_t>(content.size()), fnv1a64(content.data(), content.size()), writer};
}

namespace {

nlohmann::json entry(const PartRecord& p) { return {{"bytes", p.bytes}, {"fnv1a64", hex64(p.checksum)}}; }

PartRecord record_of(const nlohmann::json& j, int writer) {
  return {j.at("bytes").get<int64_t>(), std::stoull(j.at("fnv1a64").get<std::string>(), nullptr, 16), writer};
}

}  // namespace

std::string round_manifest(int64_t round, int world_size, const std::string& config_yaml, const PartRecord& global,
                           const std::map<int, PartRecord>& parts_by_job_rank) {
  nlohmann::json manifest = {
      {"format", kCheckpointFormat}, {"round", round}, {"world_size", world_size}, {"config", config_yaml}};
  manifest["files"][file::kGlobal] = entry(global);
  for (int r = 0; r < world_size; ++r) {
    const auto part = parts_by_job_rank.find(r);
    if (part == parts_by_job_rank.end())
      throw std::logic_error("checkpoint round " + std::to_string(round) + ": no member wrote " + file::rank_part(r));
    manifest["files"][file::rank_part(r)] = entry(part->second);
    if (part->second.writer != r) manifest["stand_ins"][std::to_string(r)] = part->second.writer;
  }
  if (static_cast<int>(parts_by_job_rank.size()) != world_size)
    throw std::logic_error("checkpoint round " + std::to_string(round) + ": parts of ranks outside the job");
  return manifest.dump(2);
}

std::string Receipt::text() const {
  nlohmann::json j = {{"writer", writer}};
  for (const auto& [rank, part] : parts) j["parts"][std::to_string(rank)] = entry(part);
  if (!failed.empty()) j["failed"] = failed;
  return j.dump();
}

Receipt Receipt::parse(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    Receipt r;
    r.writer = j.at("writer").get<int>();
    r.failed = j.value("failed", "");
    if (j.contains("parts"))
      for (const auto& [rank, part] : j["parts"].items()) r.parts[std::stoi(rank)] = record_of(part, r.writer);
    return r;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("malformed receipt: ") + e.what());
  }
}

void prune_rounds(CheckpointLocation& at, int keep, int64_t committed) {
  int kept = 0;
  for (const int64_t round : at.rounds()) {
    if (round > committed) continue;
    if (kept < keep && at.read(file::round_dir(round) + "/" + file::kManifest)) {
      ++kept;
      continue;
    }
    at.remove_round(round);
  }
}

}  // namespace ppu
