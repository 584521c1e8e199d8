// S3's XML documents: see xml.hpp.
#include "store/s3/xml.hpp"

#include <charconv>

#include "cubestream/error.hpp"

namespace cubestream::s3 {

std::vector<std::string_view> xml_elements(std::string_view doc, std::string_view tag) {
  std::vector<std::string_view> out;
  const std::string open = "<" + std::string(tag), close = "</" + std::string(tag) + ">";
  std::size_t pos = 0;
  while ((pos = doc.find(open, pos)) != std::string_view::npos) {
    std::size_t after = pos + open.size();
    if (after >= doc.size()) break;
    char c = doc[after];
    if (c != '>' && c != ' ' && c != '/' && c != '\t' && c != '\n' && c != '\r') {
      pos = after;  // a longer tag name that starts with `tag`
      continue;
    }
    std::size_t gt = doc.find('>', after);
    if (gt == std::string_view::npos) break;
    if (doc[gt - 1] == '/') {  // <tag/>
      out.emplace_back();
      pos = gt + 1;
      continue;
    }
    std::size_t end = doc.find(close, gt + 1);
    if (end == std::string_view::npos) break;
    out.push_back(doc.substr(gt + 1, end - gt - 1));
    pos = end + close.size();
  }
  return out;
}

std::optional<std::string> xml_text(std::string_view doc, std::string_view tag) {
  auto all = xml_elements(doc, tag);
  if (all.empty()) return std::nullopt;
  return xml_unescape(all.front());
}

namespace {

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

std::string xml_unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    std::size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 12) {
      out.push_back('&');
      continue;
    }
    std::string_view ent = s.substr(i + 1, semi - i - 1);
    bool ok = true;
    if (ent == "amp") out.push_back('&');
    else if (ent == "lt") out.push_back('<');
    else if (ent == "gt") out.push_back('>');
    else if (ent == "quot") out.push_back('"');
    else if (ent == "apos") out.push_back('\'');
    else if (ent.size() > 1 && ent[0] == '#') {
      std::uint32_t cp = 0;
      const bool hexa = ent[1] == 'x' || ent[1] == 'X';
      std::string_view digits = ent.substr(hexa ? 2 : 1);
      auto res = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hexa ? 16 : 10);
      ok = !digits.empty() && res.ec == std::errc() && res.ptr == digits.data() + digits.size() && cp <= 0x10FFFF;
      if (ok) append_utf8(out, cp);
    } else {
      ok = false;
    }
    if (!ok) {
      out.push_back('&');
      continue;
    }
    i = semi;
  }
  return out;
}

ListPage parse_list_page(std::string_view doc) {
  auto root = xml_elements(doc, "ListBucketResult");
  if (root.empty()) throw Error(ErrorCode::kCorruptData, "ListObjectsV2 answer without <ListBucketResult>");
  std::string_view r = root.front();
  ListPage page;
  for (auto contents : xml_elements(r, "Contents"))
    if (auto k = xml_text(contents, "Key")) page.keys.push_back(*k);
  for (auto cp : xml_elements(r, "CommonPrefixes"))
    if (auto p = xml_text(cp, "Prefix")) page.prefixes.push_back(*p);
  page.truncated = xml_text(r, "IsTruncated").value_or("false") == "true";
  page.next_token = xml_text(r, "NextContinuationToken").value_or("");
  return page;
}

}  // namespace cubestream::s3
