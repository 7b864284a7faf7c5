// PCRE2 behind Python's `re` interface (regex.h). The interpreter, not the
// JIT: patterns are compiled on every filter call, where JIT compilation
// would cost more than the matching, and only the interpreter honours the
// depth limit. Since PCRE2 10.30 the interpreter keeps its backtracking
// frames on the heap, so no subject or pattern can overflow the stack.
//
// PCRE2's match limit counts from zero again at each start position of an
// unanchored search, so one search over n bytes may take n times the limit
// ("(?:a|a){18}b" over 4,000 a's: 36 s). A search therefore tries at most
// kStartWindow start positions per call (PCRE2's offset limit) and goes on
// from the next window while the operation is within its time budget.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "playbook/jinja/regex.h"

#include <pcre2.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace prov::jinja {

// Owners of PCRE2's handles (outside the anonymous namespace: RegexSearcher,
// a friend of Regex, holds them).
template <typename T, void (*Free)(T*)>
struct PcreFreeFn {
  void operator()(T* p) const { Free(p); }
};
using PcreCompileContext =
    std::unique_ptr<pcre2_compile_context,
                    PcreFreeFn<pcre2_compile_context, pcre2_compile_context_free>>;
using PcreMatchContext =
    std::unique_ptr<pcre2_match_context, PcreFreeFn<pcre2_match_context, pcre2_match_context_free>>;
using PcreMatchData =
    std::unique_ptr<pcre2_match_data, PcreFreeFn<pcre2_match_data, pcre2_match_data_free>>;

namespace {

// What one operation (a search, a whole findall or replace) may take, across
// all its calls into PCRE2; each call takes at most kStartWindow times the
// match limit.
constexpr std::chrono::milliseconds kRegexOperationBudget{2000};
constexpr size_t kStartWindow = 32;
// The longest text a replacement may make ("" replaced by a long text at
// every position of a long one would make gigabytes).
constexpr size_t kRegexMaxOutput = 64 << 20;

std::string PcreErrorText(int code) {
  PCRE2_UCHAR buf[256];
  if (pcre2_get_error_message(code, buf, sizeof buf) < 0) return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buf);
}

// A pattern as it appears in a message: long ones are cut.
std::string ShownPattern(std::string_view pattern) {
  if (pattern.size() <= 120) return std::string(pattern);
  return std::string(pattern.substr(0, 120)) + "...";
}

// Python's \Z is the end of the text; PCRE2's \Z also matches before a final
// newline and its \z is Python's \Z.
std::string PythonToPcrePattern(std::string_view p) {
  std::string out;
  out.reserve(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 1 < p.size()) {
      out += '\\';
      out += p[i + 1] == 'Z' ? 'z' : p[i + 1];
      ++i;
    } else {
      out += p[i];
    }
  }
  return out;
}

bool IsOctalDigit(char c) {
  return c >= '0' && c <= '7';
}

// One piece of a parsed replacement: literal text, or a group's text.
struct ReplacementPiece {
  std::string text;
  std::optional<size_t> group;
};

// Python's re template syntax (re._parser.parse_template): \1 to \99,
// \g<n>, \g<name>, octal \0 and \ooo, the escapes \a \b \f \n \r \t \v \\;
// any other escaped ASCII letter is an error, any other escaped character
// stays as written (backslash included).
Result<std::vector<ReplacementPiece>> ParsePythonReplacement(const Regex& re, std::string_view r) {
  std::vector<ReplacementPiece> pieces(1);
  auto literal = [&](std::string_view s) {
    if (pieces.back().group) pieces.emplace_back();
    pieces.back().text += s;
  };
  auto group = [&](size_t n) -> Status {
    if (n > re.group_count())
      return Status::Invalid("invalid group reference " + std::to_string(n) + " in replacement '" +
                             std::string(r) + "'");
    pieces.push_back({"", n});
    return Status::Ok();
  };
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] != '\\') {
      literal(r.substr(i, 1));
      continue;
    }
    if (i + 1 >= r.size())
      return Status::Invalid("bad escape (end of replacement) in '" + std::string(r) + "'");
    const char c = r[++i];
    if (c == 'g') {
      size_t close = r.find('>', i + 1);
      if (i + 1 >= r.size() || r[i + 1] != '<' || close == std::string_view::npos)
        return Status::Invalid("missing group name in replacement '" + std::string(r) + "'");
      std::string_view name = r.substr(i + 2, close - i - 2);
      i = close;
      if (name.empty())
        return Status::Invalid("missing group name in replacement '" + std::string(r) + "'");
      std::optional<size_t> n;
      if (name.find_first_not_of("0123456789") == std::string_view::npos) {
        if (name.size() > 9)
          return Status::Invalid("invalid group reference in replacement '" + std::string(r) + "'");
        n = std::stoul(std::string(name));
      } else {
        n = re.GroupNumber(name);
        if (!n)
          return Status::Invalid("unknown group name '" + std::string(name) + "' in replacement '" +
                                 std::string(r) + "'");
      }
      Status s = group(*n);
      if (!s.ok()) return s;
    } else if (c == '0') {
      int v = 0, digits = 0;
      while (digits < 2 && i + 1 < r.size() && IsOctalDigit(r[i + 1]))
        v = v * 8 + (r[++i] - '0'), ++digits;
      literal(std::string(1, static_cast<char>(v)));
    } else if (c >= '1' && c <= '9') {
      if (i + 2 < r.size() && IsOctalDigit(c) && IsOctalDigit(r[i + 1]) && IsOctalDigit(r[i + 2])) {
        int v = (c - '0') * 64 + (r[i + 1] - '0') * 8 + (r[i + 2] - '0');
        if (v > 0377)
          return Status::Invalid("octal escape value outside of range 0-0o377 in replacement '" +
                                 std::string(r) + "'");
        i += 2;
        literal(std::string(1, static_cast<char>(v)));
        continue;
      }
      size_t n = static_cast<size_t>(c - '0');
      if (i + 1 < r.size() && r[i + 1] >= '0' && r[i + 1] <= '9') n = n * 10 + (r[++i] - '0');
      Status s = group(n);
      if (!s.ok()) return s;
    } else {
      static constexpr std::string_view kFrom = "abfnrtv\\", kTo = "\a\b\f\n\r\t\v\\";
      if (size_t k = kFrom.find(c); k != std::string_view::npos) {
        literal(kTo.substr(k, 1));
      } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        return Status::Invalid(std::string("bad escape \\") + c + " in replacement '" +
                               std::string(r) + "'");
      } else {
        literal(r.substr(i - 1, 2));
      }
    }
  }
  return pieces;
}

// The next search start after an empty match at `at` that PCRE2 refused to
// repeat: one character on (a UTF-8 sequence, or one byte of an invalid one).
size_t NextUtf8Char(std::string_view s, size_t at) {
  ++at;
  while (at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) ++at;
  return at;
}

}  // namespace

std::optional<std::string> RegexMatch::Group(std::string_view subject, size_t n) const {
  if (n >= groups.size() || !groups[n]) return std::nullopt;
  return std::string(subject.substr(groups[n]->begin, groups[n]->end - groups[n]->begin));
}

void Regex::Deleter::operator()(pcre2_code* code) const {
  pcre2_code_free(code);
}

Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

namespace {

// Compiles the translated pattern, UTF-8 with Unicode properties (\d \w \s
// \b as in Python's str patterns) or, for subjects that are not UTF-8 (raw
// node output), bytes.
Result<pcre2_code*> CompilePcre(const std::string& translated, const std::string& pattern,
                                RegexFlags flags, bool utf) {
  uint32_t options = PCRE2_USE_OFFSET_LIMIT;
  if (utf) options |= PCRE2_UTF | PCRE2_UCP;
  if (flags.ignorecase) options |= PCRE2_CASELESS;
  if (flags.multiline) options |= PCRE2_MULTILINE;
  PcreCompileContext ctx(pcre2_compile_context_create(nullptr));
  if (!ctx) return Status::Internal("out of memory compiling a regular expression");
  pcre2_set_newline(ctx.get(), PCRE2_NEWLINE_LF);  // Python: only \n ends a line
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()),
                                   translated.size(), options, &error, &offset, ctx.get());
  if (!code)
    return Status::Invalid("invalid regular expression '" + ShownPattern(pattern) + "' at offset " +
                           std::to_string(offset) + ": " + PcreErrorText(error) +
                           (utf ? "" : " (matching text that is not UTF-8)"));
  return code;
}

// Whether `s` is UTF-8 as PCRE2 wants it (no surrogates, nothing past
// U+10FFFF, shortest forms), asked of PCRE2 itself with an empty pattern.
bool IsPcreUtf8(std::string_view s) {
  static pcre2_code* const empty = [] {
    int error = 0;
    PCRE2_SIZE offset = 0;
    return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(""), 0, PCRE2_UTF, &error, &offset, nullptr);
  }();
  PcreMatchData md(pcre2_match_data_create(1, nullptr));
  if (!empty || !md) return false;
  return pcre2_match(empty, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md.get(),
                     nullptr) >= 0;
}

}  // namespace

Result<Regex> Regex::Compile(std::string_view pattern, RegexFlags flags) {
  Regex re;
  re.pattern_ = std::string(pattern);
  re.translated_ = PythonToPcrePattern(pattern);
  re.flags_ = flags;
  auto code = CompilePcre(re.translated_, re.pattern_, flags, !flags.ascii);
  if (!code.ok()) return code.status();
  re.code_.reset(*code);
  uint32_t captures = 0;
  pcre2_pattern_info(*code, PCRE2_INFO_CAPTURECOUNT, &captures);
  re.group_count_ = captures;
  return re;
}

std::optional<size_t> Regex::GroupNumber(std::string_view name) const {
  const std::string n(name);
  int rc = pcre2_substring_number_from_name(code_.get(), reinterpret_cast<PCRE2_SPTR>(n.c_str()));
  if (rc <= 0) return std::nullopt;
  return static_cast<size_t>(rc);
}

Status Regex::LimitError(int rc) const {
  const char* what = rc == PCRE2_ERROR_MATCHLIMIT   ? "match limit (backtracking steps)"
                     : rc == PCRE2_ERROR_DEPTHLIMIT ? "depth limit (backtracking nesting)"
                     : rc == PCRE2_ERROR_HEAPLIMIT  ? "memory limit"
                                                    : nullptr;
  if (what)
    return Status::Invalid("regular expression '" + ShownPattern(pattern_) + "' hit its " + what +
                           ": nested quantifiers such as (a*)* backtrack without end; "
                           "write the pattern so that each character can match one way");
  return Status::Invalid("regular expression '" + ShownPattern(pattern_) +
                         "': " + PcreErrorText(rc));
}

// The searches of one operation over one subject: the match data, the
// context and the time budget, made once.
class RegexSearcher {
 public:
  RegexSearcher(const Regex& re, std::string_view subject)
      : re_(re),
        subject_(subject),
        ctx_(pcre2_match_context_create(nullptr)),
        deadline_(std::chrono::steady_clock::now() + kRegexOperationBudget) {
    code_ = re.code_.get();
    if (re.flags_.ascii) {
      utf_ = false;
    } else if (IsPcreUtf8(subject)) {
      utf_ = true;
    } else {
      auto bytes = CompilePcre(re.translated_, re.pattern_, re.flags_, false);
      if (!bytes.ok()) {
        status_ = bytes.status();
        return;
      }
      bytes_code_.reset(*bytes);
      code_ = bytes_code_.get();
    }
    data_.reset(pcre2_match_data_create_from_pattern(code_, nullptr));
    if (!data_ || !ctx_) {
      status_ = Status::Internal("out of memory matching a regular expression");
      return;
    }
    pcre2_set_match_limit(ctx_.get(), kRegexMatchLimit);
    pcre2_set_depth_limit(ctx_.get(), kRegexDepthLimit);
    pcre2_set_heap_limit(ctx_.get(), 256 * 1024);  // KiB: 256 MiB of backtracking frames
  }

  const Status& status() const { return status_; }

  // Searches from `start` (a character boundary): true with `m` filled, or
  // false (nothing matches, or an error in status()).
  bool Next(size_t start, uint32_t options, RegexMatch& m) {
    const bool anchored = (options & PCRE2_ANCHORED) != 0;
    if (utf_) options |= PCRE2_NO_UTF_CHECK;  // checked once, in the constructor
    while (true) {
      const size_t last = anchored ? start : std::min(subject_.size(), start + kStartWindow - 1);
      pcre2_set_offset_limit(ctx_.get(), last);
      int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(subject_.data()), subject_.size(),
                           start, options, data_.get(), ctx_.get());
      if (rc > 0) {
        Fill(m);
        return true;
      }
      if (rc != PCRE2_ERROR_NOMATCH) {
        status_ = re_.LimitError(rc == 0 ? PCRE2_ERROR_NOMEMORY : rc);
        return false;
      }
      if (anchored || last >= subject_.size()) return false;
      if (std::chrono::steady_clock::now() > deadline_) {
        status_ = TimeError();
        return false;
      }
      start = After(last);
      options &= ~PCRE2_NOTEMPTY_ATSTART;  // only at the first start position
    }
  }

  Status TimeError() const {
    return Status::Invalid(
        "regular expression '" + ShownPattern(re_.pattern()) + "' hit its time limit (" +
        std::to_string(kRegexOperationBudget.count()) + " ms for one call) over a text of " +
        std::to_string(subject_.size()) + " bytes");
  }
  // The next start position after `at`: one character on (one byte when the
  // subject is not UTF-8).
  size_t After(size_t at) const { return utf_ ? NextUtf8Char(subject_, at) : at + 1; }
  bool OverBudget() const { return std::chrono::steady_clock::now() > deadline_; }

 private:
  void Fill(RegexMatch& m) const {
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data_.get());
    const uint32_t pairs = pcre2_get_ovector_count(data_.get());
    m.groups.assign(pairs, std::nullopt);
    for (uint32_t i = 0; i < pairs; ++i)
      if (ov[2 * i] != PCRE2_UNSET && ov[2 * i + 1] != PCRE2_UNSET && ov[2 * i] <= ov[2 * i + 1])
        m.groups[i] = RegexMatch::Span{ov[2 * i], ov[2 * i + 1]};
    if (!m.groups[0]) m.groups[0] = RegexMatch::Span{ov[0], ov[0]};  // \K past the end
  }

  const Regex& re_;
  std::string_view subject_;
  pcre2_code* code_ = nullptr;
  std::unique_ptr<pcre2_code, Regex::Deleter> bytes_code_;
  bool utf_ = false;
  PcreMatchData data_;
  PcreMatchContext ctx_;
  std::chrono::steady_clock::time_point deadline_;
  Status status_;
};

Result<std::optional<RegexMatch>> Regex::Search(std::string_view subject, size_t start,
                                                bool anchored) const {
  RegexSearcher searcher(*this, subject);
  if (!searcher.status().ok()) return searcher.status();
  if (start > subject.size()) return std::optional<RegexMatch>();
  RegexMatch m;
  if (searcher.Next(start, anchored ? PCRE2_ANCHORED : 0, m)) return std::optional<RegexMatch>(m);
  if (!searcher.status().ok()) return searcher.status();
  return std::optional<RegexMatch>();
}

Result<std::optional<RegexMatch>> Regex::FullMatch(std::string_view subject) const {
  RegexSearcher searcher(*this, subject);
  if (!searcher.status().ok()) return searcher.status();
  RegexMatch m;
  if (searcher.Next(0, PCRE2_ANCHORED | PCRE2_ENDANCHORED, m)) return std::optional<RegexMatch>(m);
  if (!searcher.status().ok()) return searcher.status();
  return std::optional<RegexMatch>();
}

Result<std::vector<RegexMatch>> Regex::FindAll(std::string_view subject) const {
  RegexSearcher searcher(*this, subject);
  if (!searcher.status().ok()) return searcher.status();
  std::vector<RegexMatch> out;
  size_t start = 0;
  uint32_t options = 0;
  while (start <= subject.size()) {
    RegexMatch m;
    if (!searcher.Next(start, options, m)) {
      if (!searcher.status().ok()) return searcher.status();
      if (options == 0) break;
      // No non-empty match at `start` after an empty one there: on by one.
      start = searcher.After(start);
      options = 0;
      continue;
    }
    const RegexMatch::Span span = *m.groups[0];
    out.push_back(std::move(m));
    // After an empty match, the next one may not be empty at the same place
    // (Python 3.7's rule; a non-empty match there is fine).
    if (span.end <= span.begin) {
      start = span.begin;
      options = PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
    } else {
      start = span.end;
      options = 0;
    }
    if (searcher.OverBudget()) return searcher.TimeError();
  }
  return out;
}

Result<std::string> Regex::Replace(std::string_view subject, std::string_view replacement,
                                   size_t count) const {
  auto pieces = ParsePythonReplacement(*this, replacement);
  if (!pieces.ok()) return pieces.status();
  auto matches = FindAll(subject);
  if (!matches.ok()) return matches.status();
  std::string out;
  size_t at = 0, done = 0;
  for (const RegexMatch& m : *matches) {
    if (count != 0 && done == count) break;
    out.append(subject.substr(at, m.groups[0]->begin - at));
    for (const ReplacementPiece& p : *pieces) {
      out += p.text;
      if (p.group && *p.group < m.groups.size() && m.groups[*p.group]) {
        const RegexMatch::Span g = *m.groups[*p.group];
        out.append(subject.substr(g.begin, g.end - g.begin));
      }
    }
    at = m.groups[0]->end;
    ++done;
    if (out.size() > kRegexMaxOutput)
      return Status::Invalid("regex_replace of '" + ShownPattern(pattern_) + "' makes more than " +
                             std::to_string(kRegexMaxOutput >> 20) + " MiB");
  }
  out.append(subject.substr(at));
  return out;
}

Regex FixedRegex(std::string_view pattern, RegexFlags flags) {
  flags.ascii = true;
  auto re = Regex::Compile(pattern, flags);
  if (!re.ok()) {
    std::fprintf(stderr, "provisiond: bad built-in pattern: %s\n", re.status().message().c_str());
    std::abort();
  }
  return std::move(*re);
}

bool Matches(const Regex& re, std::string_view s) {
  auto m = re.FullMatch(s);
  return m.ok() && m->has_value();
}

}  // namespace prov::jinja
