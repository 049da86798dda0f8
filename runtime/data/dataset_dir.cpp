#include "data/dataset_dir.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/atomic_file.h"
#include "data/token_shard.h"

namespace ppu::data {
namespace fs = std::filesystem;
using nlohmann::json;

void write_dataset(const std::string& dir, DatasetMeta meta, const std::vector<int32_t>& train,
                   const std::vector<int32_t>& val) {
  fs::create_directories(dir);
  meta.train_tokens = train.size();
  meta.val_tokens = val.size();
  write_token_shard((fs::path(dir) / kTrainShardName).string(), train, meta.vocab);
  write_token_shard((fs::path(dir) / kValShardName).string(), val, meta.vocab);

  json j = {{"format", "ppu-token-dataset"},
            {"version", 1},
            {"vocab", meta.vocab},
            {"source", meta.source},
            {"entropy_rate_nats", nullptr},
            {"tokenizer", meta.tokenizer},
            {"train_tokens", meta.train_tokens},
            {"val_tokens", meta.val_tokens}};
  if (meta.entropy_rate_nats) j["entropy_rate_nats"] = *meta.entropy_rate_nats;
  if (meta.synthetic) {
    const auto& s = *meta.synthetic;
    j["synthetic"] = {{"vocab", s.vocab},
                      {"order", s.order},
                      {"support", s.support},
                      {"zipf_exponent", s.zipf_exponent},
                      {"seed", s.seed}};
  }
  if (!meta.inputs.empty()) j["inputs"] = meta.inputs;
  atomic_write_file((fs::path(dir) / kMetaName).string(), j.dump(2) + "\n");
}

DatasetMeta read_dataset_meta(const std::string& dir) {
  const std::string path = (fs::path(dir) / kMetaName).string();
  json j;
  try {
    j = json::parse(read_file_bytes(path));
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": invalid JSON: " + e.what());
  }
  auto need = [&](const char* key) -> const json& {
    if (!j.contains(key)) throw std::runtime_error(path + ": missing key '" + key + "'");
    return j.at(key);
  };
  DatasetMeta m;
  try {
    if (need("format").get<std::string>() != "ppu-token-dataset")
      throw std::runtime_error(path + ": key 'format' is not \"ppu-token-dataset\"");
    m.vocab = need("vocab").get<uint64_t>();
    m.source = need("source").get<std::string>();
    const json& h = need("entropy_rate_nats");
    if (!h.is_null()) m.entropy_rate_nats = h.get<double>();
    m.tokenizer = j.value("tokenizer", std::string());
    m.train_tokens = need("train_tokens").get<uint64_t>();
    m.val_tokens = need("val_tokens").get<uint64_t>();
    if (j.contains("synthetic")) {
      const json& s = j.at("synthetic");
      SyntheticCorpusOptions o;
      o.vocab = s.at("vocab").get<uint32_t>();
      o.order = s.at("order").get<uint32_t>();
      o.support = s.at("support").get<uint32_t>();
      o.zipf_exponent = s.at("zipf_exponent").get<double>();
      o.seed = s.at("seed").get<uint64_t>();
      m.synthetic = o;
    }
    if (j.contains("inputs")) m.inputs = j.at("inputs").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": malformed value: " + e.what());
  }
  return m;
}

}  // namespace ppu::data
