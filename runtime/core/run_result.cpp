#include "core/run_result.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace ppu {

using json = nlohmann::json;

std::string format_run_result(const RunResult& r) {
  const json j = {{"ppu_result", RunResult::kVersion},
                  {"round", r.round},
                  {"eval_loss", r.eval_loss},
                  {"perplexity", r.perplexity},
                  {"steps", r.steps},
                  {"tokens", r.tokens},
                  {"checkpoint_round", r.checkpoint_round},
                  {"seconds", r.seconds},
                  {"checksum", r.checksum}};
  std::string out = j.dump();
  if (out.size() > RunResult::kMaxBytes)
    throw std::length_error("run result of " + std::to_string(out.size()) + " bytes exceeds " +
                            std::to_string(RunResult::kMaxBytes));
  return out;
}

std::optional<RunResult> parse_run_result(const std::string& message) {
  if (message.size() > RunResult::kMaxBytes + 16) return std::nullopt;
  const json j = json::parse(message, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("ppu_result") || j["ppu_result"] != RunResult::kVersion) return std::nullopt;
  auto integer = [&](const char* k) { return j.contains(k) && j[k].is_number_integer(); };
  auto number = [&](const char* k) { return j.contains(k) && j[k].is_number(); };
  if (!integer("round") || !number("eval_loss") || !number("perplexity") || !integer("steps") || !integer("tokens") ||
      !integer("checkpoint_round") || !number("seconds") || !j.contains("checksum") || !j["checksum"].is_string())
    return std::nullopt;
  RunResult r;
  r.round = j["round"].get<int64_t>();
  r.eval_loss = j["eval_loss"].get<double>();
  r.perplexity = j["perplexity"].get<double>();
  r.steps = j["steps"].get<int64_t>();
  r.tokens = j["tokens"].get<int64_t>();
  r.checkpoint_round = j["checkpoint_round"].get<int64_t>();
  r.seconds = j["seconds"].get<double>();
  r.checksum = j["checksum"].get<std::string>();
  return r;
}

}  // namespace ppu
