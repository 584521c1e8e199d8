// The little XML that S3 answers with: ListObjectsV2 results (ListBucketResult) and error
// documents (<Error><Code>..</Code><Message>..</Message></Error>). Elements are found by tag
// name; S3 does not nest an element inside one of the same name, which this relies on.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cubestream::s3 {

// The raw inner text of every <tag ...>...</tag> (and "" for every <tag/>) in `doc`, in order.
std::vector<std::string_view> xml_elements(std::string_view doc, std::string_view tag);

// The unescaped text of the first <tag> in `doc`, or nullopt.
std::optional<std::string> xml_text(std::string_view doc, std::string_view tag);

// Replaces the five predefined entities and numeric character references (&#NN; &#xNN;, written
// as UTF-8). An unknown or malformed reference is kept as it is.
std::string xml_unescape(std::string_view s);

struct ListPage {
  std::vector<std::string> keys;      // Contents/Key
  std::vector<std::string> prefixes;  // CommonPrefixes/Prefix
  bool truncated = false;             // IsTruncated
  std::string next_token;             // NextContinuationToken
};

// Parses one ListObjectsV2 response page. A document without <ListBucketResult> is
// Error(kCorruptData).
ListPage parse_list_page(std::string_view doc);

}  // namespace cubestream::s3
