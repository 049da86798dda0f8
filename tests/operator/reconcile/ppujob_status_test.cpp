// Unit tests of the typed PPUJob status (operator/src/reconcile/ppujob_status.h): every field of
// the CRD's status schema (read from manifests/crd/ppu.dev_ppujobs.yaml) is typed and round-trips
// to the same JSON; absent fields stay absent; what reconcile() writes reads back to itself;
// conditions keep their transition time while their status holds.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <stdexcept>
#include <string>

#include "reconcile/ppujob_status.h"
#include "reconcile/reconciler.h"
#include "schema_sample.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::at;
using testing::gang;
using testing::kNow;
using testing::make_job;
using testing::new_status;
using testing::observed;
using testing::with_exit;

json round_trip(const json& j) { return j.get<PPUJobStatus>(); }

using testing::sample_of;

TEST(PPUJobStatus, EveryFieldOfTheCrdSchemaRoundTrips) {
  const YAML::Node crd = YAML::LoadFile(std::string(PPU_SOURCE_DIR) + "/manifests/crd/ppu.dev_ppujobs.yaml");
  const YAML::Node schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
  ASSERT_TRUE(schema["properties"]) << "no status schema in the CRD";
  const json full = sample_of(schema);
  ASSERT_GE(full.size(), 18u) << full.dump();
  const PPUJobStatus st = full.get<PPUJobStatus>();
  EXPECT_TRUE(st.unknown.empty()) << "fields of the schema that the struct does not type: " << st.unknown.dump();
  EXPECT_EQ(json(st), full) << "nested fields lost or changed";
  EXPECT_EQ(st.phase, JobPhase::Pending);
  EXPECT_EQ(st.result->ranks_reported, 7);
  EXPECT_EQ(st.model_export->claim_name, "text");
  EXPECT_EQ(std::get<std::string>(*st.perplexity), "12.345");
}

TEST(PPUJobStatus, AbsentStaysAbsentAndOddButValidShapesAreKept) {
  EXPECT_EQ(round_trip(json::object()), json::object());
  EXPECT_EQ(json(json().get<PPUJobStatus>()), json::object()) << "null: no status yet";
  for (const json& j :
       {json{{"phase", "Running"}}, json{{"conditions", json::array()}},  // an empty list stays one
        json{{"perplexity", 9}},                                          // int-or-string: an integer stays one
        json{{"result", json::object()}}, json{{"result", {{"outerRound", 3}}}, {"export", {{"path", "model"}}}},
        json{{"conditions", json::array({{{"type", "Created"},
                                          {"status", "True"},
                                          {"reason", "Created"},
                                          {"message", "m"},
                                          {"lastTransitionTime", at(0)}}})}},
        json{{"restartCount", 0}, {"someoneElses", {{"a", 1}}}}})
    EXPECT_EQ(round_trip(j), j) << j.dump();
  const PPUJobStatus st = json{{"restartCount", 2}}.get<PPUJobStatus>();
  EXPECT_FALSE(st.phase);
  EXPECT_FALSE(st.ready_ranks);
  EXPECT_TRUE(st.conditions.empty());
  EXPECT_EQ(st.restart_count, 2);
}

TEST(PPUJobStatus, ValuesTheCrdRefusesThrow) {
  EXPECT_THROW(json({{"phase", "Bogus"}}).get<PPUJobStatus>(), std::invalid_argument);
  EXPECT_THROW(json({{"restartCount", "two"}}).get<PPUJobStatus>(), json::type_error);
  EXPECT_THROW(json({{"perplexity", 1.5}}).get<PPUJobStatus>(), std::invalid_argument);
  EXPECT_THROW(json::array().get<PPUJobStatus>(), std::invalid_argument);
}

TEST(PPUJobStatus, WhatReconcileWritesReadsBackToItself) {
  json job = make_job("demo", 2);
  std::vector<json> statuses;
  auto pass = [&](std::vector<json> pods) {
    const auto st = new_status(reconcile(observed(job, std::move(pods))));
    ASSERT_TRUE(st);
    statuses.push_back(*st);
    job["status"] = *st;
  };
  pass({});                       // accepted: Pending, conditions, counts
  pass(gang(job, 2, "Running"));  // Running
  auto pods = gang(job, 2, "Running");
  for (auto& p : pods) p = with_exit(p, 0, testing::rank_result());
  pass(pods);  // Succeeded with the ranks' result
  for (const auto& st : statuses) EXPECT_EQ(round_trip(st), st) << st.dump();
  EXPECT_EQ(statuses.back()["phase"], "Succeeded");
  EXPECT_EQ(statuses.back()["result"]["ranksReported"], 2);
}

TEST(PPUJobStatus, ConditionsKeepTheirTransitionTimeWhileTheirStatusHolds) {
  PPUJobStatus st;
  st.set_condition("Running", "True", "AllRanksRunning", "up", kNow, 1);
  st.set_condition("Running", "True", "AllRanksRunning", "still up", kNow + 60, 2);
  ASSERT_EQ(st.conditions.size(), 1u);
  EXPECT_EQ(st.conditions[0].last_transition_time, at(0));
  EXPECT_EQ(st.conditions[0].message, "still up");
  EXPECT_EQ(st.conditions[0].observed_generation, 2);
  st.set_condition("Running", "False", "GangRestart", "down", kNow + 120, 2);
  EXPECT_EQ(st.conditions[0].last_transition_time, at(120));
  st.set_condition("Created", "True", "Created", "", kNow, 2);
  EXPECT_EQ(st.conditions.size(), 2u);
  ASSERT_NE(st.condition("Created"), nullptr);
  EXPECT_TRUE(st.condition("Created")->is_true());
  st.remove_condition("Running");
  st.remove_condition("Created");
  EXPECT_EQ(json(st), json({{"conditions", json::array()}})) << "the list was there: it stays, empty";
}

TEST(PPUJobStatus, PhaseWordsAreTheApiConstants) {
  for (const char* word : phase::kAll) {
    const auto p = parse_phase(word);
    ASSERT_TRUE(p) << word;
    EXPECT_STREQ(to_string(*p), word);
  }
  EXPECT_FALSE(parse_phase("pending"));
}

}  // namespace
}  // namespace ppu::op
