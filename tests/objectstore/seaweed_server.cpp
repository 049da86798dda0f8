#include "seaweed_server.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "../common/free_port.h"

namespace ppu::testing {

namespace {

constexpr const char* kAccessKey = "ppu-test-access";
constexpr const char* kSecretKey = "ppu-test-secret-key-0123456789";

std::string weed_binary() {
  const std::string cmd = std::string(PPU_SOURCE_DIR) + "/scripts/build-seaweedfs.sh --print-dir";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p) != nullptr) out = buf;  // the last line
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  std::string weed = out + "/weed";
  if (access(weed.c_str(), X_OK) != 0)
    throw std::runtime_error(weed +
                             " is missing: ctest's objectstore.seaweedfs (scripts/build-seaweedfs.sh) builds it");
  return weed;
}

// A free port whose SeaweedFS gRPC twin (port + 10000) is free too and below 65536.
int free_port_pair() {
  for (int i = 0; i < 100; ++i) {
    const int p = free_port();
    if (p + 10000 < 65536) return p;
  }
  throw std::runtime_error("no free loopback port below 55536");
}

}  // namespace

SeaweedServer::SeaweedServer() : weed_(weed_binary()) {
  char tmpl[] = "/tmp/ppu-seaweedfs.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  master_ = free_port_pair();
  volume_ = free_port_pair();
  filer_ = free_port_pair();
  s3_ = free_port_pair();
  std::ofstream(dir_ + "/s3.json") << R"({"identities": [{"name": "ppu", "credentials": [{"accessKey": ")" << kAccessKey
                                   << R"(", "secretKey": ")" << kSecretKey
                                   << R"("}], "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]})";
  std::filesystem::create_directories(dir_ + "/data");
}

SeaweedServer::~SeaweedServer() {
  process_.resume();
  process_.kill_hard();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void SeaweedServer::start() {
  auto port = [](const char* flag, int p) { return std::string("-") + flag + "=" + std::to_string(p); };
  auto grpc = [](const char* flag, int p) { return std::string("-") + flag + ".grpc=" + std::to_string(p + 10000); };
  process_ = spawn({weed_,
                    "server",
                    "-ip=127.0.0.1",
                    "-ip.bind=127.0.0.1",
                    "-dir=" + dir_ + "/data",
                    "-filer",
                    "-s3",
                    "-s3.config=" + dir_ + "/s3.json",
                    port("master.port", master_),
                    grpc("master.port", master_),
                    port("volume.port", volume_),
                    grpc("volume.port", volume_),
                    port("filer.port", filer_),
                    grpc("filer.port", filer_),
                    port("s3.port", s3_),
                    grpc("s3.port", s3_),
                    "-s3.port.iceberg=0",
                    "-s3.port.lance=0",
                    "-master.volumeSizeLimitMB=64",
                    "-volume.max=16"},
                   dir_ + "/weed.log");
  wait_until_serving();
}

void SeaweedServer::wait_until_serving() {
  S3Settings quick = settings();
  quick.connect_timeout_s = 1;
  quick.stall_s = 5;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  std::string last;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      // Ready once a write is stored: the first grows the volumes (seconds), and after a
      // restart on the same data the volume server registers with the master a little after S3
      // answers, refusing writes until then.
      S3Client client(quick, credentials(), bucket());
      client.create_bucket();
      client.put("warm-up", std::string(1 << 20, 'w'));
      client.remove("warm-up");
      return;
    } catch (const S3Error& e) {
      last = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  throw std::runtime_error("SeaweedFS did not store a write within 90 s (last: " + last + ")\n" + log_tail());
}

void SeaweedServer::resume() {
  process_.resume();
  wait_until_serving();
}

void SeaweedServer::kill() {
  process_.resume();
  process_.kill_hard();
}

void SeaweedServer::restart() {
  kill();
  start();
}

S3Settings SeaweedServer::settings() const {
  S3Settings s;
  s.endpoint = "http://127.0.0.1:" + std::to_string(s3_);
  s.region = "us-east-1";
  s.path_style = true;
  return s;
}

S3Credentials SeaweedServer::credentials() { return {kAccessKey, kSecretKey, ""}; }

std::string SeaweedServer::log_tail() const {
  std::ifstream in(dir_ + "/weed.log");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::ostringstream out;
  for (std::size_t i = lines.size() > 30 ? lines.size() - 30 : 0; i < lines.size(); ++i) out << lines[i] << '\n';
  return out.str();
}

}  // namespace ppu::testing
