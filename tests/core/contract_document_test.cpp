// The runtime's half of the contract (core/contract_document.h): what Python reads must be what
// the C++ writes.
#include "core/contract_document.h"

#include <gtest/gtest.h>

#include <string>

#include "core/job_contract.h"
#include "core/run_summary.h"

namespace ppu {
namespace {

// Each summary field's shape has the JSON type the field list documents (a default-valued field
// must not be mistaken for another type: an unset nlohmann::json is null, not an object).
TEST(ContractDocument, EverySummaryFieldHasItsDocumentedType) {
  const auto fields = runtime_contract().at("summary").at("fields");
  for (const auto& f : run_summary_schema()) {
    SCOPED_TRACE(f.name);
    ASSERT_TRUE(fields.contains(f.name));
    const std::string type = f.type.substr(0, f.type.find(" (optional)"));
    EXPECT_EQ(fields.at(f.name).at("type").get<std::string>(), type);
    EXPECT_EQ(fields.at(f.name).at("optional").get<bool>(), type != f.type);
  }
  EXPECT_EQ(fields.size(), run_summary_schema().size());
}

// A summary as ppu-train writes it has exactly the keys the contract lists, at every depth
// where the contract lists them.
TEST(ContractDocument, ASummaryWrittenFromCppHasTheContractsShape) {
  RunSummary s;
  s.recovery.faults["killed"] = FaultTally{2, 1.5};
  s.recovery.degraded = {DegradedSpan{3, 4, {1}}};
  const nlohmann::json written = s;
  const auto shape = runtime_contract().at("summary");
  for (const auto& [key, value] : written.items()) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(shape.at("fields").contains(key));
    const auto& field = shape.at("fields").at(key);
    if (!field.contains("fields")) continue;
    for (const auto& [sub, _] : value.items()) {
      EXPECT_TRUE(field.at("fields").contains(sub)) << sub;
    }
  }
  const auto faults = shape.at("fields").at("recovery").at("fields").at("faults");
  EXPECT_TRUE(faults.at("values").at("fields").contains("count"));  // a map of kind -> tally
  EXPECT_EQ(shape.at("fields").at("recovery").at("fields").at("degraded").at("items").at("type"), "object");
}

TEST(ContractDocument, ExitDecisionsAreOnExits) {
  const auto exits = runtime_contract().at("exit_codes");
  const int peer = exits.at("codes").at("peer_failure").get<int>();
  EXPECT_EQ(peer, contract::exit_code::kPeerFailure);
  EXPECT_EQ(exits.at("on_exit").at("live").at(std::to_string(peer)), "restart_gang");
  EXPECT_EQ(exits.at("on_exit").at("gang").at(std::to_string(contract::exit_code::kRejoin)), "restart_gang");
  EXPECT_EQ(exits.at("on_exit").at("live").at(std::to_string(contract::exit_code::kRejoin)), "restart_rank");
  EXPECT_EQ(exits.at("on_exit").at("live").at(std::to_string(contract::exit_code::kConfigError)), "fail_job");
}

TEST(ContractDocument, ShapeOfNamesMapsArraysAndFreeFormObjects) {
  EXPECT_EQ(shape_of(nlohmann::json::object()), (nlohmann::json{{"type", "object"}}));
  EXPECT_EQ(shape_of(nlohmann::json{{"*", 1}}).at("values").at("type"), "integer");
  EXPECT_EQ(shape_of(nlohmann::json::array({1.5})).at("items").at("type"), "number");
  EXPECT_EQ(shape_of(nlohmann::json(true)).at("type"), "boolean");
  EXPECT_EQ(rank_summary_file(3), "rank-3.json");
}

}  // namespace
}  // namespace ppu
