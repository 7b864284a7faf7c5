#include "playbook/jinja/regex.h"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

namespace prov::jinja {
namespace {

Regex MustCompile(const std::string& pattern, RegexFlags flags = {}) {
  auto r = Regex::Compile(pattern, flags);
  REQUIRE_MESSAGE(r.ok(), std::string(pattern + ": " + r.status().message()));
  return std::move(*r);
}

// re.findall of a pattern without groups (the whole matches).
std::vector<std::string> FindAllText(const std::string& pattern, const std::string& subject) {
  Regex re = MustCompile(pattern);
  auto all = re.FindAll(subject);
  REQUIRE_MESSAGE(all.ok(), std::string(all.status().message()));
  std::vector<std::string> out;
  for (const auto& m : *all) out.push_back(*m.Group(subject, 0));
  return out;
}

std::string Sub(const std::string& pattern, const std::string& replacement,
                const std::string& subject, size_t count = 0) {
  auto r = MustCompile(pattern).Replace(subject, replacement, count);
  REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
  return *r;
}

}  // namespace

TEST_CASE("regex: Python's syntax and results") {
  // Each row as Python 3.11 answers re.search(pattern, subject).group(0)
  // ("<none>" where it finds nothing).
  struct Row {
    const char* pattern;
    const char* subject;
    const char* want;
  };
  const Row rows[] = {
      {"(?P<host>node)(?P<n>\\d+)", "x node12 y", "node12"},
      {"(?P<a>x)(?P=a)", "axxb", "xx"},
      {"\\bword\\b", "a word here", "word"},
      {"\\bword\\b", "swordfish", "<none>"},
      {"\\d+", "n\xd9\xa3\xd9\xa4!", "\xd9\xa3\xd9\xa4"},  // Arabic-Indic digits, as Python's str
      {"(?i)NODE", "node1", "node"},
      {"^b", "a\nb", "<none>"},
      {"(?m)^b", "a\nb", "b"},
      {"a$", "a\n", "a"},         // $ before a final newline
      {"a\\Z", "a\n", "<none>"},  // \Z: the end of the text only
      {"a\\Z", "a", "a"},
      {"a.c", "a\nc", "<none>"},
      {"(?s)a.c", "a\nc", "a\nc"},
      {"x{2}", "xxx", "xx"},
      {"[[:digit:]]+", "ab12", "12"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.pattern);
    Regex re = MustCompile(row.pattern);
    auto m = re.Search(row.subject);
    REQUIRE(m.ok());
    CHECK((*m ? *(*m)->Group(row.subject, 0) : std::string("<none>")) == row.want);
  }

  Regex named = MustCompile("(?P<host>[a-z]+)(?P<n>\\d+)?");
  CHECK(named.group_count() == 2);
  CHECK(named.GroupNumber("n") == 2u);
  CHECK_FALSE(named.GroupNumber("nope"));
  auto m = named.Search("abc");
  REQUIRE((m.ok() && *m));
  CHECK_FALSE((*m)->Group("abc", 2));  // took no part: Python's None

  // re.match is anchored at the start, re.search is not.
  CHECK_FALSE(*MustCompile("ode").Search("node", 0, true));
  CHECK(*MustCompile("nod").Search("node", 0, true));

  auto icase = Regex::Compile("NODE", {.ignorecase = true});
  REQUIRE(icase.ok());
  CHECK(*icase->Search("a node"));
  auto multi = Regex::Compile("^b$", {.multiline = true});
  REQUIRE(multi.ok());
  CHECK(*multi->Search("a\nb\nc"));
}

TEST_CASE("regex: findall and sub follow Python's rules for empty matches") {
  CHECK(FindAllText("x*", "abxd") == std::vector<std::string>{"", "", "x", "", ""});
  CHECK(FindAllText("[0-9]+", "a1b22c") == std::vector<std::string>{"1", "22"});
  CHECK(FindAllText("", "\xc3\xa9\xc3\xa9") == std::vector<std::string>{"", "", ""});
  CHECK(Sub("x*", "-", "abxd") == "-a-b--d-");
  CHECK(Sub("a", "b", "aaa", 2) == "bba");
  CHECK(Sub("^(\\w+)=(\\w+)$", "\\2=\\1", "key=val") == "val=key");
  CHECK(Sub("(?P<k>\\w+)=(?P<v>\\w+)", "\\g<v>:\\g<k>:\\g<0>", "a=b") == "b:a:a=b");
  CHECK(Sub("(a)|b", "[\\1]", "ab") == "[a][]");  // an unmatched group is ''
  CHECK(Sub("a", "\\n\\t\\\\$1", "a") == "\n\t\\$1");
  CHECK(Sub("a", "\\.", "a") == "\\.");  // Python keeps unknown non-letter escapes
  CHECK(Sub("a", "\\101", "a") == "A");  // octal
  CHECK(Sub("cost", "price", "cost $5") == "price $5");

  Regex one = MustCompile("(a)");
  for (const char* bad : {"\\2", "\\g<x>", "\\g<2>", "\\q", "\\", "\\g<1"}) {
    CAPTURE(bad);
    auto r = one.Replace("a", bad);
    CHECK_FALSE(r.ok());
  }
}

TEST_CASE("regex: errors name the pattern") {
  auto r = Regex::Compile("([a-z");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("invalid regular expression '([a-z' at offset") !=
        std::string::npos);
  CHECK_FALSE(Regex::Compile("\xff").ok());  // a pattern is text (UTF-8)
}

TEST_CASE("regex: catastrophic backtracking hits a limit instead of hanging") {
  const std::string as(5000, 'a');
  for (const char* pattern : {"(a*)*b", "(a|a)*c", "(a+)+$x", "(?:a|aa)+!"}) {
    CAPTURE(pattern);
    Regex re = MustCompile(pattern);
    // With a 'b' (or c, x, !) at the end the required-character shortcut
    // does not apply; one character short of it is the worst case.
    const std::string subject = as + "-bcx!";
    auto m = re.Search(subject);
    auto all = re.FindAll(subject);
    auto sub = re.Replace(subject, "x");
    for (const Status& s : {m.status(), all.status(), sub.status()}) {
      REQUIRE_FALSE(s.ok());
      CHECK(s.message().find("hit its") != std::string::npos);
    }
  }
  // Each search stopped at the match limit (the message above says so): a
  // search that backtracked on would not have returned.
}

TEST_CASE("regex: long subjects neither overflow the stack nor fail") {
  // std::regex recursed once per character here and overflowed the stack.
  const std::string long_a(2'000'000, 'a');
  auto m = MustCompile("(a|b)*c?$").Search(long_a);
  CHECK_FALSE(m.ok());  // deeper than the depth limit: an error, not a crash
  auto simple = MustCompile("a*$").Search(long_a);
  REQUIRE(simple.ok());
  REQUIRE(*simple);
  CHECK((*simple)->groups[0]->end == long_a.size());

  std::string lines;
  for (int i = 0; i < 100'000; ++i) lines += "key" + std::to_string(i) + "=value\n";
  Regex kv = MustCompile("(?m)^key(\\d+)=(\\w+)$");
  auto all = kv.FindAll(lines);
  REQUIRE(all.ok());
  CHECK(all->size() == 100'000u);
  auto replaced = kv.Replace(lines, "\\2");
  REQUIRE(replaced.ok());
  CHECK(replaced->size() == 600'000u);
  // Invalid UTF-8 in a subject (node output) is searched, not refused.
  auto bytes =
      MustCompile("b+").Search(std::string("a\xff\xfe"
                                           "bb"));
  REQUIRE(bytes.ok());
  CHECK(*bytes);
}

}  // namespace prov::jinja
