// Regular expressions from playbooks and templates (regex_search,
// regex_findall, regex_replace, the match/search tests, lineinfile's regexp)
// on PCRE2 with bounded work: a pattern written for Python's `re` may
// backtrack exponentially ("(a*)*b" over "aaaa…"), and the text it runs on
// (facts, command output) comes from nodes. A search that passes the limits
// is an error saying so, never a hang or a stack overflow.
//
// Python's syntax where PCRE2 has it: (?P<name>...), (?P=name), \d \w \s \b
// (Unicode-aware, as Python's str patterns), (?i) (?m) (?s) (?x), $ matching
// before a final newline, \Z as Python's end of text. Replacements use
// Python's template syntax (\1, \g<1>, \g<name>, \n, \\). Where they differ
// (docs/playbooks.md, "Regular expressions"): PCRE2 also accepts syntax
// Python refuses (possessive quantifiers, \K, recursion, \Q..\E); Python's
// \uXXXX, \UXXXXXXXX and \N{name} are refused; x{,n} is a literal in PCRE2;
// text that is not UTF-8 (raw command output) is matched byte by byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

struct pcre2_real_code_8;

namespace prov::jinja {

struct RegexFlags {
  bool ignorecase = false;  // re.IGNORECASE
  bool multiline = false;   // re.MULTILINE
  bool ascii = false;       // re.ASCII: bytes, ASCII-only classes and case
};

// Work allowed from one start position (PCRE2's match limit: backtracking
// steps) and the deepest backtracking nesting (its depth limit). Past either
// the search fails with "hit its match limit" or "hit its depth limit". One
// operation (a search, findall or replace) also has a time budget (2 s,
// regex.cc) over all its start positions: the one limit that depends on the
// machine's speed, met only by patterns that are slow everywhere.
inline constexpr uint32_t kRegexMatchLimit = 1'000'000;
inline constexpr uint32_t kRegexDepthLimit = 100'000;

// One match: the byte span of the whole match and of each group; a group
// that did not take part is nullopt (Python's None).
struct RegexMatch {
  struct Span {
    size_t begin = 0, end = 0;
  };
  std::vector<std::optional<Span>> groups;  // [0] is the whole match

  std::optional<std::string> Group(std::string_view subject, size_t n) const;
};

class RegexSearcher;

// A compiled pattern. Thread-compatible: a const Regex may be used by
// several threads at once (each search has its own match data).
class Regex {
 public:
  // Compiles `pattern` (Python syntax as above). The error names the
  // pattern, the offset and what is wrong.
  static Result<Regex> Compile(std::string_view pattern, RegexFlags flags = {});

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  const std::string& pattern() const { return pattern_; }
  // Capturing groups, not counting the whole match.
  size_t group_count() const { return group_count_; }
  // The number of the group named `name`, if there is one.
  std::optional<size_t> GroupNumber(std::string_view name) const;

  // re.search (anchored: re.match) from byte `start`: nullopt when nothing
  // matches, an error when the pattern hit a limit or the subject is
  // rejected.
  Result<std::optional<RegexMatch>> Search(std::string_view subject, size_t start = 0,
                                           bool anchored = false) const;
  // re.fullmatch: a match of the whole subject, or nullopt.
  Result<std::optional<RegexMatch>> FullMatch(std::string_view subject) const;
  // re.finditer: every non-overlapping match, left to right, with Python's
  // rule for empty matches (one may follow a non-empty one).
  Result<std::vector<RegexMatch>> FindAll(std::string_view subject) const;
  // re.sub: replaces the first `count` matches (0: all) by `replacement`,
  // a Python template.
  Result<std::string> Replace(std::string_view subject, std::string_view replacement,
                              size_t count = 0) const;

 private:
  friend class RegexSearcher;
  struct Deleter {
    void operator()(pcre2_real_code_8* code) const;
  };
  Regex() = default;
  Status LimitError(int rc) const;

  std::unique_ptr<pcre2_real_code_8, Deleter> code_;
  std::string pattern_;
  std::string translated_;  // in PCRE2's syntax
  RegexFlags flags_;
  size_t group_count_ = 0;
};

// A pattern of provisiond's own code (names, YAML scalars), compiled once
// with `ascii` set (as std::regex matched, byte by byte: no Kelvin sign
// passes for a 'k' in a user name); a bad one is a bug and aborts. These run on the bounded engine
// too: text from playbooks and manifests may be long, and std::regex recursed once per character of
// it (a 60 kB YAML number overflowed the stack).
Regex FixedRegex(std::string_view pattern, RegexFlags flags = {});
// Whether all of `s` matches `re` (std::regex_match); a limit hit is no match.
bool Matches(const Regex& re, std::string_view s);

}  // namespace prov::jinja
