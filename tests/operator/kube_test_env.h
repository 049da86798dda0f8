// KubeTestEnv: a real etcd + kube-apiserver on loopback for one test process, started and
// stopped through scripts/kube-test-env.sh (random ports, temp certs, RBAC, admin client cert,
// CRD installed). Also small process helpers for running ppu-operator and kubectl.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "../common/child_process.h"
#include "../common/free_port.h"
#include "wait_until.h"

namespace ppu::op::testing {

class KubeTestEnv {
 public:
  KubeTestEnv();  // starts; throws std::runtime_error with the launcher's output on failure
  ~KubeTestEnv();
  const std::string& kubeconfig() const { return kubeconfig_; }
  const std::string& dir() const { return dir_; }
  void restart_apiserver();
  // Runs kubectl with this env's kubeconfig; returns exit code, output (stdout+stderr) in `out`.
  int kubectl(const std::string& args, std::string& out, const std::string& stdin_text = "") const;

 private:
  int script(const std::string& cmd, std::string& out) const;
  std::string dir_, kubeconfig_;
};

// ppu-operator and other programs the tests run beside themselves (tests/common/child_process.h).
using Process = ppu::testing::ChildProcess;
using ppu::testing::spawn;

// Polls `pred` every 50 ms until true or `timeout_s` passes (a safety net, never a timing claim).
bool eventually(const std::function<bool()>& pred, double timeout_s = 60);
using ppu::testing::free_port;  // a free loopback port (tests/common/free_port.h)
std::string run_capture(const std::string& shell_cmd, int& rc);

}  // namespace ppu::op::testing
