// Parser for the Prometheus text exposition format (version 0.0.4): what each `ppu-train`
// rank serves on /metrics. Comments, HELP and TYPE lines are skipped; label values are
// unescaped; timestamps are ignored. Malformed lines are skipped rather than failing the scrape.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ppu::op {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> parse_prometheus_text(const std::string& text);

}  // namespace ppu::op
