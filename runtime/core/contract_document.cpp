#include "core/contract_document.h"

#include <csignal>
#include <string>
#include <utility>
#include <vector>

#include "core/checkpoint_names.h"
#include "core/config.h"
#include "core/job_contract.h"
#include "core/run_summary.h"

namespace ppu {

namespace {

namespace ec = contract::exit_code;

const char* decision_name(contract::OnExit d) {
  switch (d) {
    case contract::OnExit::Finished: return "finished";
    case contract::OnExit::FailJob: return "fail_job";
    case contract::OnExit::RestartRank: return "restart_rank";
    case contract::OnExit::RestartGang: return "restart_gang";
  }
  return "unknown";
}

nlohmann::json exit_codes() {
  const std::vector<std::pair<const char*, int>> named = {
      {"done", ec::kDone},
      {"runtime_failure", ec::kRuntimeFailure},
      {"config_error", ec::kConfigError},
      {"peer_failure", ec::kPeerFailure},
      {"data_error", ec::kDataError},
      {"rejoin", ec::kRejoin},
      {"left_on_sigterm", contract::left_on_notice(SIGTERM)},
      {"left_on_sigint", contract::left_on_notice(SIGINT)},
  };
  nlohmann::json codes = nlohmann::json::object();
  nlohmann::json on_exit = {{"live", nlohmann::json::object()}, {"gang", nlohmann::json::object()}};
  for (const auto& [name, code] : named) {
    codes[name] = code;
    on_exit["live"][std::to_string(code)] = decision_name(contract::on_exit(code, true));
    on_exit["gang"][std::to_string(code)] = decision_name(contract::on_exit(code, false));
  }
  // Any code not listed (a crash's 1 aside: 134, 137, ...) is decided as this one.
  const int other = 137;
  on_exit["live"]["other"] = decision_name(contract::on_exit(other, true));
  on_exit["gang"]["other"] = decision_name(contract::on_exit(other, false));
  return {{"codes", codes}, {"notice_base", ec::kNoticeBase}, {"on_exit", on_exit}};
}

nlohmann::json environment() {
  namespace env = contract::env;
  return {{"rank", env::kRank},
          {"world_size", env::kWorldSize},
          {"local_rank", env::kLocalRank},
          {"master_addr", env::kMasterAddr},
          {"master_port", env::kMasterPort},
          {"config", env::kConfig},
          {"run_id", env::kRunId},
          {"checkpoint_dir", env::kCheckpointDir},
          {"metrics_port", env::kMetricsPort},
          {"log_prefixed", env::kLogPrefixed},
          {"onednn", env::kOneDnn},
          {"termination_log_path", env::kTerminationLogPath},
          {"external_store", env::kExternalStore}};
}

nlohmann::json files() {
  namespace cf = checkpoint_file;
  return {{"checkpoint",
           {{"manifest", cf::kManifest},
            {"global", cf::kGlobal},
            {"round_prefix", cf::kRoundPrefix},
            {"round_dir_format", cf::kRoundDirFormat},
            {"rank_part_format", cf::kRankPartFormat},
            {"receipt_format", cf::kReceiptFormat},
            {"fallback_note", cf::kFallbackNote},
            {"notice_note", cf::kNoticeNote},
            {"reached_note", cf::kReachedNote}}},
          {"rank_summary_format", kRankSummaryFormat},
          {"termination_log", contract::kTerminationLog}};
}

// A summary with every optional field set and one element in every array and map, so that its
// JSON shows the shape of each.
RunSummary example_summary() {
  RunSummary s;
  s.eval_perplexity_floor = 0.0;
  s.device = std::string();
  s.cuda_memory_bytes = CudaMemorySummary{};
  s.recovery.degraded = {DegradedSpan{0, 0, {0}}};
  s.recovery.faults = {{"*", FaultTally{}}};
  s.recovery.interruptions = {Interruption{0, "", {0}, 0, 0, 0}};
  s.recovery.size_history = {SizeChange{}};
  s.outer_sync.ranks = {ContributionSummary{}};
  s.optimizer_settings = nlohmann::json::object();  // free-form: every inner.* and outer.* key
  return s;
}

nlohmann::json summary() {
  const nlohmann::json example = example_summary();
  nlohmann::json fields = nlohmann::json::object();
  for (const auto& f : run_summary_schema()) {
    nlohmann::json shape = shape_of(example.at(f.name));
    shape["optional"] = f.type.find("(optional)") != std::string::npos;
    shape["doc"] = f.doc;
    fields[f.name] = shape;
  }
  return {{"type", "object"}, {"fields", fields}};
}

nlohmann::json choices() {
  nlohmann::json out = nlohmann::json::object();
#define CHOICE(Enum, key, values) out[key] = choice_names<Enum>();
  PPU_CONFIG_CHOICES
#undef CHOICE
  return out;
}

nlohmann::json rank_metrics() {
  nlohmann::json out = nlohmann::json::object();
#define PPU_CONTRACT_RANK_METRIC(constant, name) out[metric_key(#constant)] = name;
  PPU_RANK_METRICS(PPU_CONTRACT_RANK_METRIC)
#undef PPU_CONTRACT_RANK_METRIC
  return out;
}

}  // namespace

std::string metric_key(const std::string& constant) {
  std::string out;
  for (std::size_t i = 1; i < constant.size(); ++i) {  // past the k
    const char c = constant[i];
    if (c >= 'A' && c <= 'Z') {
      if (i > 1) out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

nlohmann::json shape_of(const nlohmann::json& example) {
  if (example.is_object()) {
    if (example.size() == 1 && example.contains("*")) return {{"type", "object"}, {"values", shape_of(example["*"])}};
    nlohmann::json out = {{"type", "object"}};
    if (example.empty()) return out;  // free-form
    nlohmann::json fields = nlohmann::json::object();
    for (const auto& [key, value] : example.items()) fields[key] = shape_of(value);
    out["fields"] = fields;
    return out;
  }
  if (example.is_array()) {
    nlohmann::json out = {{"type", "array"}};
    if (!example.empty()) out["items"] = shape_of(example.front());
    return out;
  }
  if (example.is_boolean()) return {{"type", "boolean"}};
  if (example.is_number_integer()) return {{"type", "integer"}};
  if (example.is_number()) return {{"type", "number"}};
  return {{"type", "string"}};
}

nlohmann::json runtime_contract() {
  return {{"exit_codes", exit_codes()},
          {"env", environment()},
          {"binaries",
           {{"train", contract::kTrainBinary},
            {"rendezvous", contract::kRendezvousBinary},
            {"export", contract::kExportBinary}}},
          {"files", files()},
          {"summary", summary()},
          {"choices", choices()},
          {"metrics", {{"rank", rank_metrics()}}}};
}

}  // namespace ppu
