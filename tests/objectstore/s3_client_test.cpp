// S3Client against a real SeaweedFS (seaweed_server.h): objects round-trip byte for byte, a
// listing follows its continuation tokens, a missing key is an answer and not an error, wrong
// keys are refused as a setting to fix (not retried), and a server that is killed or frozen
// gives a retryable error, then serves what it stored once it is back.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

#include "objstore/s3_client.h"
#include "seaweed_server.h"

namespace ppu {
namespace {

using testing::SeaweedServer;

std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(gen() & 0xff);
  return s;
}

class S3ClientIT : public ::testing::Test {
 protected:
  void SetUp() override { server_.start(); }
  S3Client client() { return {server_.settings(), SeaweedServer::credentials(), SeaweedServer::bucket()}; }
  SeaweedServer server_;
};

TEST_F(S3ClientIT, ObjectsRoundTripByteForByte) {
  S3Client s3 = client();
  const std::string big = random_bytes(3 << 20, 1);  // 3 MiB, every byte value
  s3.put("run/round-000001/rank-00000.pt", big);
  s3.put("run/round-000001/manifest.json", "{}");
  s3.put("run/round 2/a+b=c.pt", "odd key");
  s3.put("run/empty", "");
  s3.put("other/x", "not under run/");
  EXPECT_EQ(s3.get("run/round-000001/rank-00000.pt"), big);
  EXPECT_EQ(s3.get("run/round 2/a+b=c.pt"), "odd key");
  EXPECT_EQ(s3.get("run/empty"), "");
  EXPECT_EQ(s3.size("run/round-000001/rank-00000.pt"), static_cast<int64_t>(big.size()));
  const auto listed = s3.list("run/");
  ASSERT_EQ(listed.size(), 4u);
  EXPECT_EQ(listed[0].key, "run/empty");
  EXPECT_EQ(listed[1].key, "run/round 2/a+b=c.pt");
  EXPECT_EQ(listed[2].key, "run/round-000001/manifest.json");
  EXPECT_EQ(listed[3].key, "run/round-000001/rank-00000.pt");
  EXPECT_EQ(listed[3].size, static_cast<int64_t>(big.size()));
  s3.put("run/empty", "now written over");
  EXPECT_EQ(s3.get("run/empty"), "now written over");
}

TEST_F(S3ClientIT, AMissingKeyIsAnAnswerAndRemovingItTwiceSucceeds) {
  S3Client s3 = client();
  EXPECT_EQ(s3.get("nothing/here"), std::nullopt);
  EXPECT_EQ(s3.size("nothing/here"), std::nullopt);
  s3.put("gone", "x");
  s3.remove("gone");
  EXPECT_EQ(s3.get("gone"), std::nullopt);
  EXPECT_NO_THROW(s3.remove("gone"));
  EXPECT_TRUE(s3.list("nothing/").empty());
}

TEST_F(S3ClientIT, AListingFollowsItsContinuationTokens) {
  S3Client s3 = client();
  for (int i = 0; i < 7; ++i) s3.put("paged/" + std::to_string(i), std::string(i, 'a'));
  const auto listed = s3.list("paged/", 2);  // 4 pages
  ASSERT_EQ(listed.size(), 7u);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(listed[i].key, "paged/" + std::to_string(i));
    EXPECT_EQ(listed[i].size, i);
  }
}

TEST_F(S3ClientIT, WrongKeysAreRefusedAsASettingToFixNotRetried) {
  S3Credentials wrong = SeaweedServer::credentials();
  wrong.secret_key = "not-the-secret";
  S3Client s3(server_.settings(), wrong, SeaweedServer::bucket());
  try {
    s3.put("x", "y");
    FAIL() << "a put with the wrong secret key was accepted";
  } catch (const S3Error& e) {
    EXPECT_EQ(e.http_status(), 403) << e.what();
    EXPECT_FALSE(e.retryable()) << e.what();
    EXPECT_NE(std::string(e.what()).find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << e.what();
  }
}

TEST_F(S3ClientIT, AKilledServerIsRetryableAndServesWhatItStoredOnceBack) {
  S3Client s3 = client();
  s3.put("kept", "stored before the kill");
  server_.kill();
  try {
    s3.put("during", "the server is down");
    FAIL() << "a put to a killed server succeeded";
  } catch (const S3Error& e) {
    EXPECT_EQ(e.http_status(), 0) << e.what();
    EXPECT_TRUE(e.retryable()) << e.what();
  }
  server_.restart();
  S3Client again = client();
  EXPECT_EQ(again.get("kept"), "stored before the kill");
  EXPECT_EQ(again.get("during"), std::nullopt);
}

TEST_F(S3ClientIT, AFrozenServerIsAbandonedAfterTheStallBound) {
  S3Settings settings = server_.settings();
  settings.stall_s = 2;
  client().put("k", "v");
  S3Client s3(settings, SeaweedServer::credentials(), SeaweedServer::bucket());
  server_.stop();
  const auto start = std::chrono::steady_clock::now();
  try {
    s3.get("k");
    FAIL() << "a get from a frozen server returned";
  } catch (const S3Error& e) {
    EXPECT_TRUE(e.retryable()) << e.what();
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 60) << "the stall bound (2 s) did not end the request";
  server_.resume();
  EXPECT_EQ(s3.get("k"), "v");
}

}  // namespace
}  // namespace ppu
