#include "objstore/s3_xml.h"

#include <pugixml.hpp>

#include <stdexcept>

namespace ppu {

S3ListPage parse_list_page(const std::string& xml) {
  pugi::xml_document doc;
  const pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size());
  const pugi::xml_node result = doc.child("ListBucketResult");
  if (!parsed || !result)
    throw std::runtime_error(std::string("an S3 listing that is not a ListBucketResult (") + parsed.description() +
                             "): " + xml.substr(0, 200));
  S3ListPage page;
  for (const pugi::xml_node c : result.children("Contents")) {
    S3Object o;
    o.key = c.child_value("Key");
    o.size = c.child("Size").text().as_llong(-1);
    if (o.key.empty() || o.size < 0)
      throw std::runtime_error("an S3 listing entry without a key or a size: " + xml.substr(0, 200));
    page.objects.push_back(std::move(o));
  }
  page.truncated = result.child("IsTruncated").text().as_bool(false);
  page.next_token = result.child_value("NextContinuationToken");
  if (page.truncated && page.next_token.empty())
    throw std::runtime_error("an S3 listing says more pages follow but gives no NextContinuationToken");
  return page;
}

S3ErrorBody parse_error_body(const std::string& xml) {
  pugi::xml_document doc;
  S3ErrorBody body;
  if (!doc.load_buffer(xml.data(), xml.size())) return body;
  const pugi::xml_node error = doc.child("Error");
  body.code = error.child_value("Code");
  body.message = error.child_value("Message");
  return body;
}

}  // namespace ppu
