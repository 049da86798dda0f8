#include "kube/leader_election.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>

#include "kube/rfc3339.h"
#include "kube/typed_object.h"

namespace ppu::op {

LeaderElector::LeaderElector(KubeApi& c, LeaseOptions o) : client_(c), o_(std::move(o)) {
  if (o_.identity.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    o_.identity = std::string(host) + "_" + std::to_string(getpid());
  }
}

LeaderElector::~LeaderElector() {
  stop_ = true;
  if (renewer_.joinable()) renewer_.join();
}

bool LeaderElector::try_acquire_or_renew() {
  const double now = now_seconds_precise();
  const std::string now_s = format_rfc3339_micro(now);
  Response cur = client_.get(ResourceKind::Lease, o_.ns, o_.name);
  if (cur.status == 404) {
    json lease = typed_object(ResourceKind::Lease, {{"metadata", {{"name", o_.name}, {"namespace", o_.ns}}},
                                                    {"spec",
                                                     {{"holderIdentity", o_.identity},
                                                      {"leaseDurationSeconds", o_.lease_duration_s},
                                                      {"acquireTime", now_s},
                                                      {"renewTime", now_s},
                                                      {"leaseTransitions", 0}}}});
    Response r = client_.create(ResourceKind::Lease, o_.ns, lease);
    leader_ = r.ok();
    if (r.ok()) last_renew_ = now;
    return leader_;
  }
  if (!cur.ok()) return leader_ = false;
  json lease = cur.body;
  json& spec = lease["spec"];
  const std::string holder = spec.value("holderIdentity", std::string());
  const int duration = spec.value("leaseDurationSeconds", o_.lease_duration_s);
  // Expiry is judged by the renew time the holder wrote; clocks are assumed roughly in sync.
  auto renewed = parse_rfc3339(spec.value("renewTime", std::string()));
  const bool expired = !renewed || static_cast<double>(*renewed + duration) < now;
  if (holder != o_.identity && !holder.empty() && !expired) return leader_ = false;
  if (holder != o_.identity) {
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
    spec["acquireTime"] = now_s;
  }
  spec["holderIdentity"] = o_.identity;
  spec["leaseDurationSeconds"] = o_.lease_duration_s;
  spec["renewTime"] = now_s;
  Response r = client_.replace(ResourceKind::Lease, o_.ns, o_.name, lease);  // 409 = someone else won
  leader_ = r.ok();
  if (r.ok()) last_renew_ = now;
  return leader_;
}

bool LeaderElector::acquire(const std::atomic<bool>& stop) {
  bool logged = false;
  while (!stop) {
    if (try_acquire_or_renew()) {
      spdlog::info("leader election: {} holds lease {}/{}", o_.identity, o_.ns, o_.name);
      return true;
    }
    if (!logged) spdlog::info("leader election: waiting for lease {}/{}", o_.ns, o_.name);
    logged = true;
    for (double t = 0; t < o_.retry_every_s && !stop; t += 0.1)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

void LeaderElector::keep(const std::function<void()>& on_lost) {
  renewer_ = std::thread([this, on_lost] {
    while (!stop_) {
      for (double t = 0; t < o_.renew_every_s && !stop_; t += 0.1)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (stop_) break;
      if (try_acquire_or_renew()) continue;
      // Transient errors are tolerated until the lease would have expired.
      if (now_seconds_precise() - last_renew_ > o_.lease_duration_s * 0.8) {
        spdlog::error("leader election: lost lease {}/{}", o_.ns, o_.name);
        leader_ = false;
        on_lost();
        return;
      }
    }
  });
}

void LeaderElector::release() {
  stop_ = true;
  if (renewer_.joinable()) renewer_.join();
  if (!leader_) return;
  client_.update_with_retry(ResourceKind::Lease, o_.ns, o_.name, [this](json& lease) {
    if (lease["spec"].value("holderIdentity", "") != o_.identity) return false;
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;  // let the next replica take over at once
    return true;
  });
  leader_ = false;
}

}  // namespace ppu::op
