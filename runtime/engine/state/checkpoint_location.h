// CheckpointLocation: where a job's checkpoints live, a directory or an S3 prefix
// (`s3://BUCKET/PREFIX`, objstore/), seen as named objects: "round-000012/rank-00000.pt",
// "round-000012/manifest.json", and the notes beside the rounds ("reached.json", ...).
//  - write(name, bytes) is atomic: a reader sees the whole new content or none of it (a
//    directory: temp file, fsync, rename; S3: one PUT, whose body the service checks against its
//    SHA-256);
//  - read(name) is the whole content, nullopt when there is no such object; a failure to read
//    one that exists throws std::runtime_error naming it;
//  - rounds() lists the round numbers that hold any object (a directory: round-* directories that
//    are not temporary), newest first; names(dir) the objects directly under `dir` ("round-000012"),
//    by their names in it; remove_round(r) removes everything of round r;
//  - for S3, every request that fails in a way that may pass (no answer, 5xx, throttling) is
//    tried again with exponential back-off (0.2 s doubling to 5 s, for up to `retry_s` in all),
//    each retry logged; one that cannot pass (403, a bad signature) throws at once.
// open(where) picks the kind by the `s3://` scheme; for S3 it reads the credentials from the
// environment (S3Credentials), and the service from S3Service over the environment's
// (S3Settings::from_environment); missing credentials or a malformed location throw ConfigError. checked(where) is
// open(where) plus, for S3, one listing of the prefix, so that wrong credentials and an unknown bucket stop the job
// before any training with ConfigError naming the setting to fix: ppu-train checks its location
// once before the rendezvous (check_runnable), ppu-export when it opens one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "core/config.h"
#include "objstore/s3_client.h"

namespace ppu {

// Where an s3:// location's service is, when not (only) where the AWS_* variables say: the
// checkpoint.s3_* keys, ppu-export's --s3-* flags. An empty endpoint or region leaves the
// environment's (else AWS's defaults).
struct S3Service {
  std::string endpoint;
  std::string region;
  bool path_style = true;

  static S3Service of(const CheckpointConfig& c) { return {c.s3_endpoint, c.s3_region, c.s3_path_style}; }
  S3Settings settings() const;
};

class CheckpointLocation {
 public:
  virtual ~CheckpointLocation() = default;

  // `what`: the setting or flag that named it (checkpoint.dir, --checkpoint), for errors.
  static std::unique_ptr<CheckpointLocation> open(const std::string& where, const std::string& what,
                                                  const S3Service& service = {}, double retry_s = 60);
  static std::unique_ptr<CheckpointLocation> checked(const std::string& where, const std::string& what,
                                                     const S3Service& service = {});

  virtual std::string text() const = 0;                         // the directory or the s3:// URL
  virtual std::string path(const std::string& name) const = 0;  // one object, as messages show it
  virtual void write(const std::string& name, const std::string& bytes,
                     Durability durability = Durability::PowerLoss) = 0;
  virtual std::optional<std::string> read(const std::string& name) = 0;
  virtual std::vector<int64_t> rounds() = 0;
  virtual std::vector<std::string> names(const std::string& dir) = 0;
  virtual void remove_round(int64_t round) = 0;

 protected:
  virtual void probe(const std::string& /*what*/) {}  // S3: one listing (checked())
};

}  // namespace ppu
