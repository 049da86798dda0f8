// Unit tests of the operator's contract: metric naming (only counters end in _total), the
// gang-restart signal carried by the decision (not by an event's reason text), and the words
// of the API in job_constants.h matching what reconcile() writes.
#include <gtest/gtest.h>

#include <prometheus/text_serializer.h>

#include <set>

#include "kube/rfc3339.h"
#include "metrics/operator_metrics.h"
#include "reconcile/job_constants.h"
#include "reconcile/reconciler.h"
#include "test_objects.h"

namespace ppu::op {
namespace {

using testing::gang;
using testing::has_event;
using testing::kNow;
using testing::make_job;
using testing::new_status;
using testing::observed;
using testing::with_exit;

TEST(OperatorMetricNames, OnlyCountersEndInTotal) {
  OperatorMetrics m;
  JobMetrics jm;
  jm.flops_executed = 3e9;
  jm.flops_full_backward = 4e9;
  m.set_job("ns1", "demo", jm, 2, 2, 0, 0);
  m.gang_restart();
  m.reconcile_done("success", 0.01);
  int families = 0;
  std::set<std::string> names;
  for (const auto& f : m.registry()->Collect()) {
    ++families;
    names.insert(f.name);
    const bool total = f.name.size() > 6 && f.name.compare(f.name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(total, f.type == prometheus::MetricType::Counter) << f.name;
  }
  EXPECT_GT(families, 10);
  EXPECT_TRUE(names.count("ppu_job_flops_executed"));
  EXPECT_TRUE(names.count("ppu_job_flops_full_backward"));
  EXPECT_FALSE(names.count("ppu_job_flops_executed_total"));
  const std::string text = prometheus::TextSerializer().Serialize(m.registry()->Collect());
  EXPECT_NE(text.find("ppu_job_flops_executed{job=\"demo\",namespace=\"ns1\"} 3000000000"), std::string::npos) << text;
  EXPECT_NE(text.find("ppu_operator_gang_restarts_total 1"), std::string::npos) << text;
}

TEST(OperatorMetricNames, JobsByPhaseCoversEveryPhase) {
  OperatorMetrics m;
  m.set_jobs_by_phase({{phase::kRunning, 3}});
  const std::string text = prometheus::TextSerializer().Serialize(m.registry()->Collect());
  for (const char* p : phase::kAll)
    EXPECT_NE(text.find(std::string("ppu_operator_jobs{phase=\"") + p + "\"}"), std::string::npos) << p;
  EXPECT_NE(text.find("ppu_operator_jobs{phase=\"Running\"} 3"), std::string::npos) << text;
}

Observed running_job_with_failed_rank(int restarts, int backoff_limit) {
  json job = make_job("demo", 2,
                      {{"phase", phase::kRunning}, {"restartCount", restarts}, {"startTime", format_rfc3339(kNow)}});
  job["spec"]["runPolicy"]["backoffLimit"] = backoff_limit;
  Observed in = observed(job, gang(job, 2, "Running"));
  in.pods[0] = with_exit(in.pods[0], 1, "boom");
  return in;
}

TEST(GangRestartSignal, SetWhenTheGangIsTornDownForARestart) {
  Decision d = reconcile(running_job_with_failed_rank(0, 2));
  EXPECT_TRUE(d.gang_restart);
  EXPECT_TRUE(has_event(d, reason::kGangRestart)) << "users still see the GangRestart event";
}

TEST(GangRestartSignal, NotSetWhenTheBackoffLimitFailsTheJob) {
  Decision d = reconcile(running_job_with_failed_rank(2, 2));
  EXPECT_FALSE(d.gang_restart);
  const auto st = new_status(d);
  ASSERT_TRUE(st);
  EXPECT_EQ((*st)["phase"], phase::kFailed);
  EXPECT_EQ((*st)["reason"], reason::kBackoffLimitExceeded);
}

TEST(GangRestartSignal, NotSetOnAHealthyPass) {
  Observed in = running_job_with_failed_rank(0, 2);
  in.pods = gang(in.job, 2, "Running");
  Decision d = reconcile(in);
  EXPECT_FALSE(d.gang_restart);
}

}  // namespace
}  // namespace ppu::op
