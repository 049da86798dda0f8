#include "export/safetensors_file.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/atomic_file.h"

namespace ppu {

namespace {

std::string dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat32: return "F32";
    case torch::kBFloat16: return "BF16";
    case torch::kFloat16: return "F16";
    case torch::kInt64: return "I64";
    default: throw std::invalid_argument(std::string("safetensors: unsupported dtype ") + c10::toString(t));
  }
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors stores little-endian data");
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> data;
  size_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__" || header.contains(name))
      throw std::invalid_argument("safetensors: duplicate or reserved name '" + name + "'");
    auto t = tensor.detach().to(torch::kCPU).contiguous();
    const size_t bytes = t.nbytes();
    header[name] = {
        {"dtype", dtype_name(t.scalar_type())}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(t));
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string file(8, '\0');
  const uint64_t n = json.size();
  std::memcpy(file.data(), &n, 8);
  file.reserve(8 + json.size() + offset);
  file += json;
  for (const auto& t : data) file.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  atomic_write_file(path, file);
}

std::vector<std::string> write_safetensors_model(const std::string& dir,
                                                 const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                                 uint64_t max_shard_bytes,
                                                 const std::map<std::string, std::string>& metadata) {
  using Shard = std::vector<std::pair<std::string, torch::Tensor>>;
  std::vector<Shard> shards(1);
  uint64_t total = 0, in_shard = 0;
  for (const auto& named : tensors) {
    const uint64_t bytes = named.second.nbytes();
    if (in_shard > 0 && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(named);
    in_shard += bytes;
    total += bytes;
  }
  if (shards.size() == 1) {
    write_safetensors(dir + "/model.safetensors", tensors, metadata);
    return {"model.safetensors"};
  }
  std::vector<std::string> files;
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    write_safetensors(dir + "/" + name, shards[i], metadata);
    for (const auto& named : shards[i]) weight_map[named.first] = name;
    files.emplace_back(name);
  }
  const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  atomic_write_file(dir + "/model.safetensors.index.json", index.dump(2) + "\n");
  files.emplace_back("model.safetensors.index.json");
  return files;
}

}  // namespace ppu
