// ppu-train: one rank of a PPU job. Reads the config (--config or PPU_CONFIG) with --set
// overrides, takes RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT / PPU_RUN_ID /
// PPU_CHECKPOINT_DIR / PPU_METRICS_PORT from the environment, trains, and writes --summary.
// --check only validates (config for WORLD_SIZE, device, dtype, dataset) and exits: ppu-launch
// runs it once before starting any rank.
// Exit codes: core/exit_status.h's table (docs/METRICS.md): 0 done, 1 runtime failure,
// 2 config/usage error, 3 peer failure or timeout, 4 missing or unusable data or checkpoint,
// 5 out of the live group, 128 + signal left on a notice (SIGTERM or SIGINT, common/notice.h).
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/crash_report.h"
#include "common/env.h"
#include "common/notice.h"
#include "common/termination_message.h"
#include "core/config.h"
#include "core/exit_status.h"
#include "core/job_contract.h"
#include "core/run_result.h"
#include "core/run_summary.h"
#include "engine/comm/collectives.h"
#include "engine/cpu/blas_kernels.h"
#include "engine/cpu/compute_threads.h"
#include "engine/cpu/onednn_switch.h"
#include "engine/trainer.h"

int main(int argc, char** argv) {
  ppu::run_widest_blas_kernels(argv);  // may re-execute this binary: before anything else runs
  ppu::install_crash_report("ppu-train");
  // A peer that exits closes its sockets; Gloo's writev to such a socket must fail with EPIPE
  // (a PeerError: exit 3, a gang restart) instead of killing this rank by SIGPIPE, which a
  // supervisor reads as a crash (seen when a stopped rank resumed after its peers had exited).
  std::signal(SIGPIPE, SIG_IGN);
  // Until the config is read, SIGTERM ends the rank at once (a container's PID 1 would otherwise
  // ignore it); from then on it is a notice (common/notice.h), acted on at a round boundary.
  std::signal(SIGTERM, [](int sig) { std::_Exit(128 + sig); });
  CLI::App app{"ppu-train: one rank of a partial-parameter-update training job"};
  std::string config_path = ppu::env_string(ppu::contract::env::kConfig, "");
  std::vector<std::string> overrides;
  std::string summary_path;
  bool check_only = false;
  app.add_option("--config", config_path, "YAML training config (default: $PPU_CONFIG)");
  app.add_flag("--check", check_only,
               "validate the config, device, dtype and dataset for this RANK/WORLD_SIZE, then exit");
  app.add_option("--set", overrides, "override a config key: dotted.key=value (repeatable)");
  app.add_option("--summary", summary_path, "write a JSON summary of the run to this file at exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ppu::usage_exit_code(app.exit(e));
  }

  // ppu-launch prefixes each line with the rank itself.
  const std::string rank_tag = std::getenv(ppu::contract::env::kLogPrefixed)
                                   ? ""
                                   : "[rank " + ppu::env_string(ppu::contract::env::kRank, "0") + "] ";
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e " + rank_tag + "%^%l%$ %v");
  try {
    const ppu::Config config = ppu::load_config(config_path, overrides);
    ppu::install_notice_handler(config.checkpoint.notice_s, [bound = config.checkpoint.notice_s](double seconds) {
      const std::string message = fmt::format(
          "left on notice: {:.1f} s after the notice no round boundary was reached (checkpoint.notice_s = {}): "
          "leaving without saving; the last checkpoint stays the resume point",
          seconds, bound);
      spdlog::error("{}", message);
      spdlog::default_logger()->flush();
      ppu::write_termination_message(message);
    });
    const ppu::OneDnnState onednn = ppu::apply_onednn_env();  // before any op runs
    ppu::RunEnv env;
    env.rendezvous = ppu::rendezvous_from_env();
    env.run_id = ppu::env_string(ppu::contract::env::kRunId, "local");
    env.checkpoint_dir = ppu::env_string(ppu::contract::env::kCheckpointDir, config.checkpoint.dir);
    env.metrics_port = ppu::env_int(ppu::contract::env::kMetricsPort, config.metrics.port);
    if (check_only) {
      ppu::check_runnable(config, env);
      std::cout << "ppu-train --check: config OK for " << env.rendezvous.world_size << " rank(s)\n";
      return 0;
    }
    if (config.train.threads > 0) ppu::configure_compute_threads(config.train.threads);
    const auto blas = ppu::loaded_blas();
    if (!summary_path.empty()) {  // fail now, not after hours of training
      std::ofstream probe(summary_path, std::ios::app);
      if (!probe) throw ppu::ConfigError("--summary: cannot write '" + summary_path + "'");
    }
    spdlog::info("rank {} of {}: method {}, slicing {} N={}, model {} layers d={} heads={}", env.rendezvous.rank,
                 env.rendezvous.world_size, ppu::method_name(config.method), ppu::slice_mode_name(config.slicing.mode),
                 config.effective_slices(), config.model.layers, config.model.d_model, config.model.heads);
    spdlog::info("BLAS: {} ({} variant, {} threads, core {} {}), {} intra-op threads; LibTorch {} built with BLAS {}",
                 blas.library.empty() ? "none mapped" : blas.library, blas.variant, blas.threads,
                 blas.core.empty() ? "-" : blas.core, ppu::blas_core_reason(blas), torch::get_num_threads(),
                 blas.libtorch, blas.torch_blas);
    if (const auto& warning = ppu::blas_kernels().warning; !warning.empty()) spdlog::warn("{}", warning);
    spdlog::info("CPU {}; ATen kernels {}; oneDNN: {}; bf16 matmuls on {}", ppu::cpu_model_name(),
                 ppu::aten_cpu_capability(), onednn.enabled ? "on" : (onednn.available ? "off (PPU_ONEDNN)" : "absent"),
                 onednn.bf16_matmul ? "oneDNN" : "ATen's own kernels");
    ppu::RunSummary summary = ppu::train(config, env);
    summary.onednn = {onednn.enabled, onednn.bf16_matmul};
    summary.kernel_path = {ppu::cpu_model_name(), blas.core, ppu::aten_cpu_capability(), onednn.enabled};
    summary.optimizer_settings = {{"inner", ppu::config_section_json(config, "inner")},
                                  {"outer", ppu::config_section_json(config, "outer")}};
    summary.blas = {blas.library,     blas.variant,    blas.threads,     torch::get_num_threads(),
                    blas.libtorch,    blas.torch_blas, blas.core,        blas.core_detected,
                    blas.core_source, blas.core_env,   blas.cpu_vectors, blas.cpu_avx512};
    spdlog::info(
        "done: eval loss {:.4f} ppl {:.3f}, FLOPs saved {:.1f}%, state {:.1f} MB (full training {:.1f} MB), checksum "
        "{}",
        summary.eval_loss, summary.eval_perplexity, 100 * summary.flops_saved_fraction, summary.state_bytes.total / 1e6,
        summary.state_bytes_full_training.total / 1e6, summary.param_checksum);
    if (!summary_path.empty()) std::ofstream(summary_path) << nlohmann::json(summary).dump(2) << "\n";
    // The operator sets a finished job's status from these (the last scrape is always older).
    ppu::write_termination_message(ppu::format_run_result(ppu::run_result_from(summary)));
    return 0;
  } catch (const std::exception& e) {  // core/exit_status.h: the error's kind decides the code
    const auto status = ppu::exit_status_of(e);
    if (status.code == 0) {  // retired: the job shrank past this slot; the job's summary is the members'
      spdlog::info("{}", status.message);
      std::error_code ignored;  // the empty file the check above left, not a summary
      if (!summary_path.empty() && std::filesystem::file_size(summary_path, ignored) == 0)
        std::filesystem::remove(summary_path, ignored);
    } else {
      spdlog::error("{}", status.message);
    }
    ppu::write_termination_message(status.message);
    return status.code;
  }
}
