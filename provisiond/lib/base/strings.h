// Small string helpers that several parts share.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace prov {

// The parts with `sep` between them ("" for none).
std::string Join(const std::vector<std::string>& parts, const std::string& sep);

// The parts as a list in words: "a, b or c" with `last` " or " ("a" alone).
std::string JoinWords(const std::vector<std::string>& parts, const std::string& last);

// `text` percent-encoded for a URL's path or query: everything but RFC 3986's
// unreserved characters (letters, digits, - _ . ~).
std::string UrlEncode(std::string_view text);

// `text` with every secret value (and every line of 8 or more characters of
// a multi-line one) replaced by "********".
std::string RedactSecrets(std::string text, const std::vector<std::string>& values);

// `s` without the characters of `chars` at its start and end (Python's
// str.strip: Jinja's `trim`, a line a node printed).
std::string Trim(const std::string& s, const std::string& chars = " \t\n\r\f\v");

// ASCII lowercase (facts, vendor names and module names are ASCII).
std::string Lower(std::string s);

// `s` as one word for a POSIX shell: always single-quoted, a quote inside as
// '\'' (what provisiond sends to nodes).
std::string ShellQuote(const std::string& s);

// `s` as one word for a POSIX shell, as Python's shlex.quote writes it: bare
// when it has only [A-Za-z0-9@%+=:,./_-], else single-quoted with a quote
// inside as '"'"' (Jinja's `quote` filter; command lines shown to people).
std::string ShlexQuote(const std::string& s);

// Base64 (RFC 4648, with padding). Decode skips whitespace and is empty
// (nullopt) for anything else outside the alphabet.
std::string Base64Encode(const std::string& in);
std::optional<std::string> Base64Decode(const std::string& in);

}  // namespace prov
