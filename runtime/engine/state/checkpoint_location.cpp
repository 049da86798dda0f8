#include "engine/state/checkpoint_location.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <utility>

#include "common/remove_tree.h"
#include "core/checkpoint_names.h"
#include "core/exit_status.h"
#include "objstore/s3_client.h"
#include "objstore/s3_url.h"

namespace fs = std::filesystem;

namespace ppu {

namespace {

// "round-000012/..." -> 12; -1 for anything else (notes, temporaries).
int64_t round_of(const std::string& name) {
  const std::string prefix = checkpoint_file::kRoundPrefix;
  if (name.rfind(prefix, 0) != 0) return -1;
  const auto end = name.find('/', prefix.size());
  const std::string digits =
      name.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

std::vector<int64_t> newest_first(std::vector<int64_t> rounds) {
  std::sort(rounds.rbegin(), rounds.rend());
  rounds.erase(std::unique(rounds.begin(), rounds.end()), rounds.end());
  return rounds;
}

class DirectoryLocation : public CheckpointLocation {
 public:
  explicit DirectoryLocation(std::string dir) : dir_(std::move(dir)) {}

  std::string text() const override { return dir_; }
  std::string path(const std::string& name) const override { return dir_ + "/" + name; }

  void write(const std::string& name, const std::string& bytes, Durability durability) override {
    const fs::path p(path(name));
    fs::create_directories(p.parent_path());
    atomic_write_file(p.string(), bytes, durability);
  }

  std::optional<std::string> read(const std::string& name) override {
    const std::string p = path(name);
    if (!fs::exists(p)) return std::nullopt;
    return read_file_bytes(p);
  }

  std::vector<int64_t> rounds() override {
    std::vector<int64_t> rounds;
    if (!fs::is_directory(dir_)) return rounds;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const auto name = entry.path().filename().string();
      if (!entry.is_directory() || name.find(".tmp") != std::string::npos) continue;
      if (const int64_t r = round_of(name); r >= 0) rounds.push_back(r);
    }
    return newest_first(rounds);
  }

  std::vector<std::string> names(const std::string& dir) override {
    std::vector<std::string> names;
    std::error_code missing;
    for (const auto& entry : fs::directory_iterator(path(dir), missing)) {
      const auto name = entry.path().filename().string();
      if (entry.is_regular_file() && name.find(".tmp") == std::string::npos) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  void remove_round(int64_t round) override { remove_tree(path(checkpoint_file::round_dir(round))); }

 private:
  std::string dir_;
};

class ObjectLocation : public CheckpointLocation {
 public:
  ObjectLocation(S3Url url, S3Settings settings, S3Credentials credentials, double retry_s)
      : url_(std::move(url)), s3_(std::move(settings), std::move(credentials), url_.bucket), retry_s_(retry_s) {}

  std::string text() const override { return url_.text(); }
  std::string path(const std::string& name) const override { return url_.text() + name; }

  void write(const std::string& name, const std::string& bytes, Durability) override {
    retrying("write " + path(name), [&] {
      s3_.put(url_.key(name), bytes);
      return true;
    });
  }

  std::optional<std::string> read(const std::string& name) override {
    return retrying("read " + path(name), [&] { return s3_.get(url_.key(name)); });
  }

  std::vector<int64_t> rounds() override {
    const auto objects = retrying("list " + url_.text(), [&] { return s3_.list(url_.prefix); });
    std::vector<int64_t> rounds;
    for (const auto& o : objects)
      if (const int64_t r = round_of(o.key.substr(url_.prefix.size())); r >= 0) rounds.push_back(r);
    return newest_first(rounds);
  }

  std::vector<std::string> names(const std::string& dir) override {
    const std::string prefix = url_.key(dir + "/");
    const auto objects = retrying("list " + path(dir + "/"), [&] { return s3_.list(prefix); });
    std::vector<std::string> names;
    for (const auto& o : objects)
      if (const auto name = o.key.substr(prefix.size()); name.find('/') == std::string::npos) names.push_back(name);
    return names;
  }

  void remove_round(int64_t round) override {
    const std::string prefix = url_.key(checkpoint_file::round_dir(round) + "/");
    const auto objects = retrying("list " + url_.text(), [&] { return s3_.list(prefix); });
    for (const auto& o : objects)
      retrying("remove s3://" + url_.bucket + "/" + o.key, [&] {
        s3_.remove(o.key);
        return true;
      });
  }

  // One listing of the prefix: wrong credentials, an unknown bucket or an endpoint that is not
  // S3 stop the job here, before any training.
  void probe(const std::string& what) override {
    try {
      retrying("list " + url_.text(), [&] { return s3_.list(url_.prefix, 1); });
    } catch (const S3Error& e) {
      throw ConfigError(what + " is " + url_.text() + " but its bucket cannot be listed: " + e.what() +
                        " (credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; endpoint: "
                        "checkpoint.s3_endpoint, else AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL; region: "
                        "checkpoint.s3_region, else AWS_REGION)");
    }
  }

 private:
  template <class F>
  auto retrying(const std::string& doing, F&& attempt) -> decltype(attempt()) {
    const auto start = std::chrono::steady_clock::now();
    double backoff_s = 0.2;
    for (int n = 1;; ++n) {
      try {
        return attempt();
      } catch (const S3Error& e) {
        const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!e.retryable() || spent + backoff_s > retry_s_) throw;
        spdlog::warn("checkpoint storage: {} failed (attempt {}: {}); trying again in {:.1f} s", doing, n, e.what(),
                     backoff_s);
        std::this_thread::sleep_for(std::chrono::duration<double>(backoff_s));
        backoff_s = std::min(5.0, backoff_s * 2);
      }
    }
  }

  S3Url url_;
  S3Client s3_;
  double retry_s_;
};

}  // namespace

S3Settings S3Service::settings() const {
  S3Settings s = S3Settings::from_environment();
  if (!endpoint.empty()) s.endpoint = endpoint;
  if (!region.empty()) s.region = region;
  s.path_style = path_style;
  return s;
}

std::unique_ptr<CheckpointLocation> CheckpointLocation::open(const std::string& where, const std::string& what,
                                                             const S3Service& service, double retry_s) {
  if (!S3Url::is_s3(where)) return std::make_unique<DirectoryLocation>(where);
  S3Url url;
  S3Credentials credentials;
  try {
    url = S3Url::parse(where, what);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
  try {
    credentials = S3Credentials::from_environment();
  } catch (const std::invalid_argument& e) {
    throw ConfigError(what + " is " + where + ": " + e.what());
  }
  return std::make_unique<ObjectLocation>(std::move(url), service.settings(), std::move(credentials), retry_s);
}

std::unique_ptr<CheckpointLocation> CheckpointLocation::checked(const std::string& where, const std::string& what,
                                                                const S3Service& service) {
  auto location = open(where, what, service);
  location->probe(what);
  return location;
}

}  // namespace ppu
