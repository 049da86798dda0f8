// Unit tests of ppu-operator's flags (operator/src/cmd/flags.h, CLI11): every flag parsed, errors that
// name the flag, defaults, repeats and empty values, and the help text.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "cmd/flags.h"

namespace ppu::op {
namespace {

TEST(Flags, ParsesAllFlags) {
  Flags f = parse_flags({"--kubeconfig", "/k", "--namespace=ml", "--metrics-addr", ":9090", "--health-addr=:9091",
                         "--leader-elect", "--scrape-interval", "500ms", "--workers", "8", "--restart-backoff=2s"});
  EXPECT_EQ(f.kubeconfig, "/k");
  EXPECT_EQ(f.ns, "ml");
  EXPECT_EQ(f.metrics_addr, ":9090");
  EXPECT_EQ(f.health_addr, ":9091");
  EXPECT_TRUE(f.leader_elect);
  EXPECT_DOUBLE_EQ(f.scrape_interval_s, 0.5);
  EXPECT_EQ(f.workers, 8);
  EXPECT_DOUBLE_EQ(f.restart_backoff_s, 2);
}

// The chart passes its values as flags, so a chart default is a second definition of the
// operator's: they must be the same (charts/ppu-operator/values.yaml, `operator:` and `service.port`).
TEST(Flags, TheChartsDefaultsAreTheOperatorsOwn) {
  const YAML::Node values = YAML::LoadFile(std::string(PPU_SOURCE_DIR) + "/charts/ppu-operator/values.yaml");
  const YAML::Node op = values["operator"];
  const Flags d = parse_flags({});
  EXPECT_EQ(":" + op["metricsPort"].as<std::string>(), d.metrics_addr);
  EXPECT_EQ(":" + op["healthPort"].as<std::string>(), d.health_addr);
  EXPECT_EQ(values["service"]["port"].as<std::string>(), op["metricsPort"].as<std::string>());
  EXPECT_DOUBLE_EQ(parse_flags({"--scrape-interval", op["scrapeInterval"].as<std::string>()}).scrape_interval_s,
                   d.scrape_interval_s);
  EXPECT_EQ(op["workers"].as<int>(), d.workers);
  EXPECT_EQ(op["logLevel"].as<std::string>(), d.log_level);
  EXPECT_EQ(op["forceDeleteOnLostNode"].as<bool>(), d.force_delete_on_lost_node);
}

TEST(Flags, ErrorsNameTheFlag) {
  auto message = [](const std::vector<std::string>& args) {
    try {
      parse_flags(args);
    } catch (const FlagError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"--scrape-interval", "soon"}).find("--scrape-interval"), std::string::npos);
  EXPECT_NE(message({"--workers", "0"}).find("--workers"), std::string::npos);
  EXPECT_NE(message({"--bogus"}).find("--bogus"), std::string::npos);
  EXPECT_NE(message({"--kubeconfig"}).find("--kubeconfig"), std::string::npos);
  EXPECT_TRUE(parse_flags({"--help"}).help);
  EXPECT_TRUE(parse_flags({"-h"}).help);
  EXPECT_EQ(message({"positional"}), "unknown flag 'positional' (see --help)");
  EXPECT_EQ(message({"--workers", "0"}), "--workers: '0' is not an integer in 1..256");
  EXPECT_EQ(message({"--restart-backoff=3x"}), "--restart-backoff: '3x' has unknown unit 'x' (use ms, s, m or h)");
  EXPECT_EQ(message({"--leader-elect=1"}), "--leader-elect: '1' is not true or false");
  EXPECT_EQ(message({"--network-policy="}), "--network-policy: '' is not true or false");
  EXPECT_EQ(message({"--force-delete-on-lost-node=maybe"}),
            "--force-delete-on-lost-node: 'maybe' is not true or false");
}

TEST(Flags, ForceDeletionOnLostNodesIsOnUnlessTurnedOff) {
  EXPECT_TRUE(parse_flags({}).force_delete_on_lost_node);
  EXPECT_TRUE(parse_flags({"--force-delete-on-lost-node"}).force_delete_on_lost_node);
  EXPECT_FALSE(parse_flags({"--force-delete-on-lost-node=false"}).force_delete_on_lost_node);
  EXPECT_NE(usage().find("\n  --force-delete-on-lost-node BOOL watch Nodes"), std::string::npos) << usage();
}

TEST(Flags, DefaultsRepeatsAndEmptyValues) {
  const Flags d = parse_flags({});
  EXPECT_EQ(d.metrics_addr, ":8080");
  EXPECT_EQ(d.health_addr, ":8081");
  EXPECT_FALSE(d.leader_elect);
  EXPECT_DOUBLE_EQ(d.scrape_interval_s, 15);
  EXPECT_EQ(d.workers, 4);
  EXPECT_DOUBLE_EQ(d.restart_backoff_s, 10);
  EXPECT_DOUBLE_EQ(d.restart_backoff_max_s, 300);
  EXPECT_EQ(d.log_level, "info");
  EXPECT_FALSE(d.help);
  // The last of a repeated flag counts; "--flag=" is an empty value (all namespaces here).
  const Flags f = parse_flags({"--workers", "2", "--workers=3", "--namespace", "a", "--namespace=", "--leader-elect",
                               "--leader-elect=false", "--restart-backoff-max", "2h"});
  EXPECT_EQ(f.workers, 3);
  EXPECT_EQ(f.ns, "");
  EXPECT_FALSE(f.leader_elect);
  EXPECT_DOUBLE_EQ(f.restart_backoff_max_s, 7200);
}

TEST(Flags, UsageListsEveryFlagWithItsValue) {
  const std::string text = usage();
  EXPECT_EQ(text.rfind("ppu-operator: the PPUJob controller", 0), 0u) << text;
  for (const char* line : {"\n  --kubeconfig FILE           kubeconfig to use", "\n  --network-policy BOOL       ",
                           "\n  --leader-elect              hold", "\n  --leader-elect-namespace NS namespace",
                           "\n  --workers N                 concurrent reconciles (default 4)\n",
                           "\n                              server authenticates (TokenReview)",
                           "\n  --help                      this text\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

}  // namespace
}  // namespace ppu::op
