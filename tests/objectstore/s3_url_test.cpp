// S3Url::parse and the S3 XML bodies: what checkpoint.dir and ppu-export accept, and what the
// client reads of a listing and an error; credentials from the environment name what is missing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "objstore/s3_client.h"
#include "objstore/s3_url.h"
#include "objstore/s3_xml.h"

namespace ppu {
namespace {

TEST(S3Url, BucketAndPrefixEndingInOneSlash) {
  const S3Url u = S3Url::parse("s3://ppu-ckpt/runs/a", "checkpoint.dir");
  EXPECT_EQ(u.bucket, "ppu-ckpt");
  EXPECT_EQ(u.prefix, "runs/a/");
  EXPECT_EQ(u.key("round-000001/manifest.json"), "runs/a/round-000001/manifest.json");
  EXPECT_EQ(S3Url::parse("s3://ppu-ckpt/runs//", "x").prefix, "runs/");
  EXPECT_EQ(S3Url::parse("s3://ppu-ckpt", "x").prefix, "");
  EXPECT_EQ(S3Url::parse("s3://ppu-ckpt/", "x").prefix, "");
  EXPECT_EQ(S3Url::parse("s3://ppu-ckpt/runs/a", "x").text(), "s3://ppu-ckpt/runs/a/");
  EXPECT_TRUE(S3Url::is_s3("s3://b/p"));
  EXPECT_FALSE(S3Url::is_s3("/checkpoints"));
}

void expect_refused(const std::string& location, const std::string& why) {
  try {
    S3Url::parse(location, "checkpoint.dir");
    FAIL() << location << " was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("checkpoint.dir"), std::string::npos) << what;
    EXPECT_NE(what.find(location), std::string::npos) << what;
    EXPECT_NE(what.find(why), std::string::npos) << what;
  }
}

TEST(S3Url, RefusalsNameTheSettingAndWhy) {
  expect_refused("/data/ckpt", "not an s3:// location");
  expect_refused("s3:///prefix", "no bucket");
  expect_refused("s3://ab/p", "3 to 63 characters");
  expect_refused("s3://Upper-Case/p", "lower-case letters");
  expect_refused("s3://-bucket/p", "starts and ends");
  expect_refused("s3://bucket//p", "starts with '/'");
}

TEST(S3Xml, ListPageWithContinuation) {
  const S3ListPage page = parse_list_page(R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>p/</Prefix>
<Contents><Key>p/a</Key><Size>12</Size></Contents><Contents><Key>p/b c</Key><Size>0</Size></Contents>
<IsTruncated>true</IsTruncated><NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>)");
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0].key, "p/a");
  EXPECT_EQ(page.objects[0].size, 12);
  EXPECT_EQ(page.objects[1].key, "p/b c");
  EXPECT_EQ(page.objects[1].size, 0);
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_token, "tok+/=");
}

TEST(S3Xml, ListPagesThatAreNotListingsThrow) {
  EXPECT_THROW(parse_list_page("<Error><Code>AccessDenied</Code></Error>"), std::runtime_error);
  EXPECT_THROW(parse_list_page("not xml"), std::runtime_error);
  EXPECT_THROW(parse_list_page("<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>"),
               std::runtime_error);
  EXPECT_THROW(parse_list_page("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
               std::runtime_error);
}

TEST(S3Xml, ErrorBodyAndAnUnreadableOne) {
  const S3ErrorBody e = parse_error_body(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The bucket does not exist</Message></Error>");
  EXPECT_EQ(e.code, "NoSuchBucket");
  EXPECT_EQ(e.message, "The bucket does not exist");
  const S3ErrorBody none = parse_error_body("");
  EXPECT_TRUE(none.code.empty());
  EXPECT_TRUE(none.message.empty());
}

TEST(S3Credentials, MissingVariablesAreNamed) {
  const char* id = std::getenv("AWS_ACCESS_KEY_ID");
  const std::string saved = id != nullptr ? id : "";
  unsetenv("AWS_ACCESS_KEY_ID");
  try {
    S3Credentials::from_environment();
    FAIL() << "no AWS_ACCESS_KEY_ID, yet credentials";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("AWS_ACCESS_KEY_ID"), std::string::npos) << e.what();
  }
  setenv("AWS_ACCESS_KEY_ID", "id", 1);
  unsetenv("AWS_SECRET_ACCESS_KEY");
  EXPECT_THROW(S3Credentials::from_environment(), std::invalid_argument);
  setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
  EXPECT_EQ(S3Credentials::from_environment().secret_key, "secret");
  if (saved.empty()) unsetenv("AWS_ACCESS_KEY_ID");
  else setenv("AWS_ACCESS_KEY_ID", saved.c_str(), 1);
}

}  // namespace
}  // namespace ppu
