#include "base/hostlist.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <unordered_set>

namespace prov {
namespace {

Status HostlistError(std::string_view text, size_t pos, const std::string& what) {
  return Status::Invalid("hostlist '" + std::string(text) + "': " + what + " at column " +
                         std::to_string(pos + 1));
}

// Splits at commas that are outside brackets.
Result<std::vector<std::pair<size_t, std::string_view>>> SplitTopLevel(std::string_view text) {
  std::vector<std::pair<size_t, std::string_view>> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ',';
    if (c == '[') {
      if (++depth > 1) return HostlistError(text, i, "nested '['");
    } else if (c == ']') {
      if (--depth < 0) return HostlistError(text, i, "']' without '['");
    } else if (c == ',' && depth == 0) {
      if (i == start) return HostlistError(text, i, "empty name");
      items.emplace_back(start, text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return HostlistError(text, text.size() - 1, "'[' without ']'");
  return items;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

// Expands the numbers inside one pair of brackets: "0-3,7" or "01-04".
Result<std::vector<std::string>> ExpandRanges(std::string_view text, size_t offset,
                                              std::string_view body, size_t max_names) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i < body.size() && body[i] != ',') continue;
    std::string_view part = body.substr(start, i - start);
    size_t at = offset + start;
    start = i + 1;
    if (part.empty()) return HostlistError(text, at, "empty range");
    size_t dash = part.find('-');
    std::string_view lo_text = part.substr(0, dash);
    std::string_view hi_text = dash == std::string_view::npos ? lo_text : part.substr(dash + 1);
    auto digits = [](std::string_view s) {
      return !s.empty() && s.size() <= 9 &&
             std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (!digits(lo_text) || !digits(hi_text))
      return HostlistError(text, at, "range '" + std::string(part) + "' is not N or N-M");
    unsigned lo = 0, hi = 0;
    std::from_chars(lo_text.data(), lo_text.data() + lo_text.size(), lo);
    std::from_chars(hi_text.data(), hi_text.data() + hi_text.size(), hi);
    if (hi < lo) return HostlistError(text, at, "range '" + std::string(part) + "' is reversed");
    if (hi - lo >= max_names)
      return HostlistError(text, at, "range '" + std::string(part) + "' is too large");
    // Zero padding follows the lower bound as written: [01-10] gives 01..10.
    size_t width = lo_text.size() > 1 && lo_text[0] == '0' ? lo_text.size() : 0;
    for (unsigned n = lo; n <= hi; ++n) {
      std::string s = std::to_string(n);
      if (s.size() < width) s.insert(0, width - s.size(), '0');
      out.push_back(std::move(s));
      if (out.size() > max_names) return HostlistError(text, at, "too many names");
    }
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view text, size_t max_names) {
  if (text.empty()) return Status::Invalid("hostlist is empty");
  auto items = SplitTopLevel(text);
  if (!items.ok()) return items.status();
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (auto [offset, item] : *items) {
    std::vector<std::string> partial{""};
    size_t i = 0;
    while (i < item.size()) {
      if (item[i] == '[') {
        size_t close = item.find(']', i);
        auto numbers =
            ExpandRanges(text, offset + i + 1, item.substr(i + 1, close - i - 1), max_names);
        if (!numbers.ok()) return numbers.status();
        if (partial.size() * numbers->size() > max_names)
          return HostlistError(text, offset + i, "too many names");
        std::vector<std::string> next;
        next.reserve(partial.size() * numbers->size());
        for (const auto& p : partial)
          for (const auto& n : *numbers) next.push_back(p + n);
        partial = std::move(next);
        i = close + 1;
      } else {
        if (!IsNameChar(item[i]))
          return HostlistError(text, offset + i,
                               std::string("unexpected character '") + item[i] + "'");
        for (auto& p : partial) p += item[i];
        ++i;
      }
    }
    for (auto& name : partial) {
      if (seen.insert(name).second) names.push_back(std::move(name));
      if (names.size() > max_names) return HostlistError(text, offset, "too many names");
    }
  }
  return names;
}

std::string CompressHostlist(std::vector<std::string> names) {
  // prefix -> (width, number) ; names without a numeric suffix stand alone.
  struct Key {
    std::string prefix;
    size_t width;  // 0 when not zero-padded
    bool operator<(const Key& o) const {
      return std::tie(prefix, width) < std::tie(o.prefix, o.width);
    }
  };
  std::map<Key, std::set<unsigned>> groups;
  std::set<std::string> plain;
  for (const auto& name : names) {
    size_t d = name.size();
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9') --d;
    std::string digits = name.substr(d);
    if (digits.empty() || digits.size() > 9) {
      plain.insert(name);
      continue;
    }
    size_t width = digits.size() > 1 && digits[0] == '0' ? digits.size() : 0;
    groups[{name.substr(0, d), width}].insert(static_cast<unsigned>(std::stoul(digits)));
  }
  std::vector<std::string> parts(plain.begin(), plain.end());
  for (const auto& [key, numbers] : groups) {
    const size_t width = key.width;  // clang 14 cannot capture a structured binding
    auto pad = [width](unsigned n) {
      std::string s = std::to_string(n);
      if (s.size() < width) s.insert(0, width - s.size(), '0');
      return s;
    };
    if (numbers.size() == 1) {
      parts.push_back(key.prefix + pad(*numbers.begin()));
      continue;
    }
    std::string body;
    for (auto it = numbers.begin(); it != numbers.end();) {
      unsigned lo = *it, hi = lo;
      while (++it != numbers.end() && *it == hi + 1) ++hi;
      if (!body.empty()) body += ',';
      body += pad(lo);
      if (hi != lo) body += "-" + pad(hi);
    }
    parts.push_back(key.prefix + "[" + body + "]");
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += ',';
    out += p;
  }
  return out;
}

bool IsHostlist(std::string_view text) {
  return text.find_first_of("[],") != std::string_view::npos;
}

}  // namespace prov
