#include "kube_test_env.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace ppu::op::testing {

std::string run_capture(const std::string& cmd, int& rc) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    rc = -1;
    return out;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

KubeTestEnv::KubeTestEnv() {
  char tmpl[] = "/tmp/ppu-kube-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::string out;
  if (script("start", out) != 0) {
    std::string keep;
    script("stop", keep);
    throw std::runtime_error("kube-test-env start failed:\n" + out);
  }
  kubeconfig_ = dir_ + "/kubeconfig";
}

KubeTestEnv::~KubeTestEnv() {
  std::string out;
  script("stop", out);
}

int KubeTestEnv::script(const std::string& cmd, std::string& out) const {
  int rc = 0;
  out = run_capture(std::string(PPU_SOURCE_DIR) + "/scripts/kube-test-env.sh " + cmd + " " + dir_, rc);
  return rc;
}

void KubeTestEnv::restart_apiserver() {
  std::string out;
  if (script("restart-apiserver", out) != 0) throw std::runtime_error("restart-apiserver failed:\n" + out);
}

int KubeTestEnv::kubectl(const std::string& args, std::string& out, const std::string& stdin_text) const {
  std::string input = dir_ + "/stdin.yaml";
  std::ofstream(input) << stdin_text;
  int rc = 0;
  out = run_capture(". " + dir_ + "/env && \"$KUBECTL\" --kubeconfig=" + kubeconfig_ + " " + args + " < " + input, rc);
  return rc;
}

bool eventually(const std::function<bool()>& pred, double timeout_s) {
  return wait_until(pred, timeout_s, std::chrono::milliseconds(50));
}

}  // namespace ppu::op::testing
