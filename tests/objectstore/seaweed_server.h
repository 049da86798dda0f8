// SeaweedServer: a real SeaweedFS (`weed server`: master, volume, filer and its S3 gateway) on
// loopback for one test, with S3 authentication on (one identity, the keys below), in a fresh
// data directory under the build's temp dir; every port is chosen free. The binary comes from
// scripts/build-seaweedfs.sh (ctest's objectstore.seaweedfs fixture builds it). start() returns
// once the S3 gateway answers a signed request (create_bucket of bucket()); kill() SIGKILLs the
// whole server (the S3 gateway with it), restart() starts it again on the same ports and data,
// stop()/resume() freeze and thaw it (resume() returns, like start(), once a write is stored: a
// volume server frozen past the master's pulse registers again a little after the thaw).
// settings() and credentials() are what a client of it uses. A failure to start throws
// std::runtime_error with the end of the server's log.
#pragma once

#include <string>

#include "../common/child_process.h"
#include "objstore/s3_client.h"

namespace ppu::testing {

class SeaweedServer {
 public:
  SeaweedServer();
  ~SeaweedServer();
  SeaweedServer(const SeaweedServer&) = delete;
  SeaweedServer& operator=(const SeaweedServer&) = delete;

  void start();
  void kill();
  void restart();
  void stop() const { process_.stop(); }
  void resume();

  S3Settings settings() const;
  static S3Credentials credentials();
  static const char* bucket() { return "ppu-test"; }
  const std::string& dir() const { return dir_; }
  std::string log_tail() const;

 private:
  void wait_until_serving();

  std::string weed_, dir_;
  int master_ = 0, volume_ = 0, filer_ = 0, s3_ = 0;
  ChildProcess process_;
};

}  // namespace ppu::testing
