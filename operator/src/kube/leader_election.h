// LeaderElector: a coordination.k8s.io/v1 Lease held by one ppu-operator replica at a time.
// acquire() blocks until this replica holds the lease (or stop() is called); a renewal thread
// keeps it and calls on_lost if it cannot renew before the lease expires — the process then
// exits, so two replicas never reconcile together. release() hands the lease over on shutdown.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "kube/kube_api.h"

namespace ppu::op {

struct LeaseOptions {
  std::string ns = "default";
  std::string name = "ppu-operator-leader";
  std::string identity;  // default: hostname + pid
  int lease_duration_s = 15;
  double renew_every_s = 5;
  double retry_every_s = 2;
};

class LeaderElector {
 public:
  LeaderElector(KubeApi& client, LeaseOptions o);
  ~LeaderElector();
  bool acquire(const std::atomic<bool>& stop);      // true once leader
  void keep(const std::function<void()>& on_lost);  // start renewing in the background
  void release();
  bool leader() const { return leader_.load(); }
  const std::string& identity() const { return o_.identity; }

  // One attempt to take or renew the lease; true if we hold it afterwards.
  bool try_acquire_or_renew();

 private:
  KubeApi& client_;
  LeaseOptions o_;
  std::atomic<bool> leader_{false}, stop_{false};
  std::thread renewer_;
  double last_renew_ = 0;
};

}  // namespace ppu::op
