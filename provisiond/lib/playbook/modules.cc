// The playbook modules. Every module that touches a node sends it one POSIX sh
// script (rarely two) that checks and changes in place, so a task costs one
// round trip. Scripts report through file descriptor 3 with "key=value"
// lines: changed=1 whenever they changed something, msg=... with exit 1 when
// they fail on purpose, and module-specific values (checksum=..., uid=...).
#include "playbook/modules.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "playbook/jinja.h"

namespace prov {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------
// Arguments

bool Has(const json& args, const std::string& key) {
  return args.is_object() && args.contains(key) && !args.at(key).is_null();
}

std::string Str(const json& args, const std::string& key, const std::string& def = "") {
  if (!Has(args, key)) return def;
  const json& v = args.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

Result<bool> Bool(const json& args, const std::string& key, bool def) {
  if (!Has(args, key)) return def;
  const json& v = args.at(key);
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<long long>() != 0;
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(), ::tolower);
    if (s == "yes" || s == "true" || s == "on" || s == "1" || s == "y") return true;
    if (s == "no" || s == "false" || s == "off" || s == "0" || s == "n" || s == "") return false;
  }
  return Status::Invalid(key + ": '" + Str(args, key) + "' is not a boolean (yes/no/true/false)");
}

Result<long long> Int(const json& args, const std::string& key, long long def) {
  if (!Has(args, key)) return def;
  const json& v = args.at(key);
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_number_float()) return static_cast<long long>(v.get<double>());
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    static const std::regex kInt("^\\s*-?[0-9]+\\s*$");
    if (std::regex_match(s, kInt)) return std::stoll(s);
  }
  return Status::Invalid(key + ": '" + Str(args, key) + "' is not a whole number");
}

// A list argument: a YAML list, or a comma-separated string.
std::vector<std::string> List(const json& args, const std::string& key) {
  std::vector<std::string> out;
  if (!Has(args, key)) return out;
  const json& v = args.at(key);
  auto add = [&](std::string s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(s.substr(b, e - b + 1));
  };
  if (v.is_array()) {
    for (const auto& x : v) add(x.is_string() ? x.get<std::string>() : x.dump());
  } else {
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, ',')) add(part);
  }
  return out;
}

std::string Join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// A file mode as chmod takes it. Integers are what YAML makes of an unquoted
// 0644 (420), so they are read as Ansible does: the number's value.
Result<std::string> ModeArg(const json& args, const std::string& key = "mode") {
  if (!Has(args, key)) return std::string();
  const json& v = args.at(key);
  if (v.is_number_integer()) {
    long long n = v.get<long long>();
    if (n < 0 || n > 07777) return Status::Invalid(key + ": " + v.dump() + " is out of range");
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04llo", n);
    return std::string(buf);
  }
  std::string s = Str(args, key);
  static const std::regex kOctal("^0?[0-7]{3,4}$");
  static const std::regex kSymbolic(
      "^([ugoa]*[-+=]([rwxXst]*|[ugo]))+(,([ugoa]*[-+=]([rwxXst]*|[ugo]))+)*$");
  if (std::regex_match(s, kOctal) || std::regex_match(s, kSymbolic)) return s;
  return Status::Invalid(
      key + ": '" + s + "' is not a mode: use octal in quotes ('0644') or symbolic (u=rw,g=r,o=r)");
}

// Renames aliases to the argument's own name.
json Canonical(const std::vector<ArgSpec>& specs, const json& args) {
  if (!args.is_object()) return args;
  json out = json::object();
  for (auto it = args.begin(); it != args.end(); ++it) {
    std::string name = it.key();
    for (const auto& a : specs)
      if (std::find(a.aliases.begin(), a.aliases.end(), name) != a.aliases.end()) name = a.name;
    if (!out.contains(name) || name == it.key()) out[name] = it.value();
  }
  return out;
}

// ---------------------------------------------------------------------------
// Outcomes

ModuleOutcome Fail(const std::string& msg, json result = json::object()) {
  ModuleOutcome o;
  o.failed = true;
  o.msg = msg;
  o.result = std::move(result);
  return o;
}

ModuleOutcome Unreachable(const Status& status) {
  ModuleOutcome o;
  o.unreachable = true;
  o.msg = status.message();
  o.result["unreachable"] = true;
  return o;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string line;
  while (std::getline(ss, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  return out;
}

std::string StripEnds(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// The shell functions every script starts with.
constexpr const char* kPrelude = R"SH(
changed() { echo changed=1 >&3; }
fail() { printf 'msg=%s\n' "$(printf '%s' "$*" | tr '\n' ' ')" >&3; exit 1; }
# attrs PATH MODE OWNER GROUP [-h]: fixes what differs, reports a change.
attrs() {
  if [ -n "$2" ]; then
    _b=$(stat -c %a -- "$1") || fail "cannot stat $1"
    _e=$(chmod -- "$2" "$1" 2>&1) || fail "chmod $2 $1: $_e"
    [ "$(stat -c %a -- "$1")" = "$_b" ] || changed
  fi
  if [ -n "$3" ]; then
    case " $(stat -c '%U %u' -- "$1") " in
      *" $3 "*) ;;
      *) _e=$(chown $5 -- "$3" "$1" 2>&1) || fail "chown $3 $1: $_e"; changed ;;
    esac
  fi
  if [ -n "$4" ]; then
    case " $(stat -c '%G %g' -- "$1") " in
      *" $4 "*) ;;
      *) _e=$(chgrp $5 -- "$4" "$1" 2>&1) || fail "chgrp $4 $1: $_e"; changed ;;
    esac
  fi
}
)SH";

struct NodeRun {
  RemoteResult r;
  std::map<std::string, std::string> meta;  // the last value of each key
  std::vector<std::pair<std::string, std::string>> meta_list;
  bool changed = false;
};

Result<NodeRun> RunOnNode(ModuleContext& ctx, const std::string& body,
                          const std::string& input = "", int timeout_ms = 0) {
  auto r = ctx.remote.Run(std::string(kPrelude) + body, input, ctx.become_user,
                          timeout_ms > 0 ? timeout_ms : ctx.timeout_ms);
  if (!r.ok()) return r.status();
  NodeRun run;
  run.r = std::move(*r);
  for (const auto& line : Lines(run.r.meta)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    if (k == "changed" && v == "1") run.changed = true;
    run.meta[k] = v;
    run.meta_list.emplace_back(k, v);
  }
  return run;
}

// The message for a script that failed: its own msg, else its stderr.
std::string FailureMessage(const NodeRun& run, const std::string& what, ModuleContext& ctx) {
  if (run.r.timed_out) return what + " timed out on " + ctx.remote.node();
  auto it = run.meta.find("msg");
  if (it != run.meta.end() && !it->second.empty()) return it->second;
  std::string err = StripEnds(run.r.err);
  if (err.size() > 2000) err = "..." + err.substr(err.size() - 2000);
  return what + " failed on " + ctx.remote.node() + " (exit " + std::to_string(run.r.exit_code) +
         ")" + (err.empty() ? "" : ": " + err);
}

ModuleOutcome FailedRun(const NodeRun& run, const std::string& what, ModuleContext& ctx) {
  json res;
  res["rc"] = run.r.exit_code;
  res["stdout"] = run.r.out;
  res["stderr"] = run.r.err;
  return Fail(FailureMessage(run, what, ctx), res);
}

std::string Q(const std::string& s) {
  return ShellQuote(s);
}

// A shell word that globs the wildcards of `pattern` and nothing else.
std::string GlobWord(const std::string& pattern) {
  std::string out;
  for (char c : pattern) {
    if (c == '*' || c == '?' || c == '[' || c == ']' ||
        std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-')
      out += c;
    else if (c == '\n')
      out += "'\n'";
    else
      out += std::string("\\") + c;
  }
  return out.empty() ? "''" : out;
}

std::string Sha256Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

Result<std::string> ReadLocalFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool IsLocalFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return false;
  in.peek();  // a directory opens but cannot be read
  return !in.bad() && !in.fail();
}

// Finds a controller-side file: absolute, or under playbook_dir/<subdir>/, or
// under playbook_dir/.
Result<std::string> FindLocalFile(const ModuleContext& ctx, const std::string& src,
                                  const std::string& subdir) {
  std::vector<std::string> tried;
  if (!src.empty() && src[0] == '/') {
    tried.push_back(src);
  } else {
    std::string dir = ctx.playbook_dir.empty() ? "." : ctx.playbook_dir;
    tried.push_back(dir + "/" + subdir + "/" + src);
    tried.push_back(dir + "/" + src);
  }
  for (const auto& p : tried)
    if (IsLocalFile(p)) return p;
  return Status::NotFound("src '" + src + "' not found (looked at " + Join(tried, ", ") + ")");
}

// ---------------------------------------------------------------------------
// command, shell

// POSIX shell word splitting without expansion, as Python's shlex.split.
Result<std::vector<std::string>> SplitWords(const std::string& s) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(cur), cur.clear(), in_word = false;
    } else if (c == '\'') {
      size_t end = s.find('\'', i + 1);
      if (end == std::string::npos) return Status::Invalid("no closing quotation in: " + s);
      cur += s.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size() &&
            (s[j + 1] == '"' || s[j + 1] == '\\' || s[j + 1] == '$' || s[j + 1] == '`'))
          ++j;
        cur += s[j];
      }
      if (j >= s.size()) return Status::Invalid("no closing quotation in: " + s);
      i = j;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 < s.size()) cur += s[++i];
      in_word = true;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

ModuleOutcome RunCommand(const json& args, ModuleContext& ctx, bool shell) {
  std::string exec_line, cmd_text;
  json cmd_json;
  if (!shell && Has(args, "argv")) {
    if (!args["argv"].is_array() || args["argv"].empty())
      return Fail("argv must be a non-empty list");
    std::vector<std::string> words;
    for (const auto& w : args["argv"])
      words.push_back(w.is_string() ? w.get<std::string>() : w.dump());
    for (const auto& w : words) exec_line += " " + Q(w);
    cmd_json = words;
    cmd_text = Join(words, " ");
  } else {
    std::string raw = Has(args, "cmd") ? Str(args, "cmd") : Str(args, "_raw_params");
    if (raw.find_first_not_of(" \t\n") == std::string::npos)
      return Fail(std::string(shell ? "shell" : "command") + ": no command given (free form, cmd" +
                  (shell ? "" : " or argv") + ")");
    cmd_text = raw;
    if (shell) {
      std::string exe = Str(args, "executable", "/bin/sh");
      exec_line = " " + Q(exe) + " -c " + Q(raw);
      cmd_json = raw;
    } else {
      auto words = SplitWords(raw);
      if (!words.ok()) return Fail("command: " + words.status().message());
      for (const auto& w : *words) exec_line += " " + Q(w);
      cmd_json = *words;
    }
  }
  auto strip = Bool(args, "strip_empty_ends", true);
  if (!strip.ok()) return Fail(strip.status().message());

  std::string s;
  s += "_exists() { for _f in \"$@\"; do if [ -e \"$_f\" ] || [ -L \"$_f\" ]; then return 0; fi; "
       "done; return 1; }\n";
  if (Has(args, "chdir"))
    s += "cd -- " + Q(Str(args, "chdir")) +
         " 2>/dev/null || fail \"Unable to change directory before execution: \"" +
         Q(Str(args, "chdir")) + "\n";
  if (Has(args, "creates"))
    s += "if _exists " + GlobWord(Str(args, "creates")) +
         "; then echo skipped=creates >&3; exit 0; fi\n";
  if (Has(args, "removes"))
    s += "if ! _exists " + GlobWord(Str(args, "removes")) +
         "; then echo skipped=removes >&3; exit 0; fi\n";
  s += "exec 3>&-\nexec" + exec_line + "\n";

  std::string input;
  if (Has(args, "stdin")) input = Str(args, "stdin") + "\n";
  auto run = RunOnNode(ctx, s, input);
  if (!run.ok()) return Unreachable(run.status());

  ModuleOutcome o;
  o.result["cmd"] = cmd_json;
  auto skipped = run->meta.find("skipped");
  if (skipped != run->meta.end()) {
    std::string path = Str(args, skipped->second);
    bool creates = skipped->second == "creates";
    o.msg = creates ? "Did not run command since '" + path + "' exists"
                    : "Did not run command since '" + path + "' does not exist";
    o.result["rc"] = 0;
    o.result["stdout"] = creates ? "skipped, since " + path + " exists"
                                 : "skipped, since " + path + " does not exist";
    o.result["stderr"] = "";
    o.result["stdout_lines"] = json::array({o.result["stdout"]});
    o.result["stderr_lines"] = json::array();
    return o;
  }
  if (run->meta.count("msg")) return FailedRun(*run, "command", ctx);
  std::string out = *strip ? StripEnds(run->r.out) : run->r.out;
  std::string err = *strip ? StripEnds(run->r.err) : run->r.err;
  o.changed = true;
  o.result["rc"] = run->r.exit_code;
  o.result["stdout"] = out;
  o.result["stderr"] = err;
  o.result["stdout_lines"] = Lines(out);
  o.result["stderr_lines"] = Lines(err);
  if (run->r.timed_out) {
    o.failed = true;
    o.msg = "command timed out after " + std::to_string(ctx.timeout_ms / 1000) + " s on " +
            ctx.remote.node();
  } else if (run->r.exit_code != 0) {
    o.failed = true;
    o.msg = run->r.exit_code == 127 && err.find("not found") != std::string::npos
                ? "command not found: " + err
                : "non-zero return code";
  }
  return o;
}

ModuleOutcome RunCommandModule(const json& args, ModuleContext& ctx) {
  return RunCommand(args, ctx, false);
}
ModuleOutcome RunShellModule(const json& args, ModuleContext& ctx) {
  return RunCommand(args, ctx, true);
}

// ---------------------------------------------------------------------------
// copy, template

struct CopyRequest {
  std::string dest;
  std::string content;
  std::string src_basename;  // used when dest is a directory; "" refuses that
  std::string mode, owner, group;
  bool backup = false;
  bool force = true;
  bool make_parents = false;  // lineinfile create=yes
};

// Contents up to this size travel with the first (and only) script; larger
// ones only after the node said its file differs.
constexpr size_t kInlineContent = 256 * 1024;

ModuleOutcome CopyContent(const CopyRequest& req, ModuleContext& ctx) {
  const std::string sum = Sha256Hex(req.content);
  auto script = [&](bool send) {
    std::string s;
    s += "dest=" + Q(req.dest) + "; want=" + sum + "; base=" + Q(req.src_basename) + "\n";
    s += "send=" + std::string(send ? "1" : "0") + "; force=" + (req.force ? "1" : "0") +
         "; backup=" + (req.backup ? "1" : "0") + "\n";
    s += R"SH(
if [ -d "$dest" ]; then
  [ -n "$base" ] || fail "dest $dest is a directory: give a file path"
  dest="${dest%/}/$base"
fi
dir=$(dirname -- "$dest")
)SH";
    if (req.make_parents)
      s += "[ -d \"$dir\" ] || { _e=$(mkdir -p -- \"$dir\" 2>&1) || fail \"mkdir $dir: $_e\"; }\n";
    s += R"SH(
[ -d "$dir" ] || fail "Destination directory $dir does not exist"
[ -d "$dest" ] && fail "dest $dest is a directory"
if [ -e "$dest" ] && [ ! -f "$dest" ]; then fail "dest $dest exists and is not a regular file"; fi
have=""
if [ -f "$dest" ]; then
  have=$(sha256sum < "$dest") || fail "cannot read $dest"
  have=${have%% *}
fi
if [ "$have" != "$want" ] && { [ -z "$have" ] || [ "$force" = 1 ]; }; then
  if [ "$send" = 0 ]; then echo need_content=1 >&3; exit 0; fi
  tmp=$(mktemp -- "$dir/.provisiond.XXXXXXXX" 2>/dev/null) || fail "cannot create a file in $dir"
  trap 'rm -f -- "$tmp"' EXIT
  cat > "$tmp" || fail "cannot write $tmp"
  got=$(sha256sum < "$tmp"); got=${got%% *}
  [ "$got" = "$want" ] || fail "content of $dest arrived damaged (sha256 $got, expected $want)"
  if [ -f "$dest" ]; then
    chmod --reference="$dest" "$tmp" 2>/dev/null
    chown --reference="$dest" "$tmp" 2>/dev/null
    if [ "$backup" = 1 ]; then
      b="$dest.$(date +%Y-%m-%d@%H:%M:%S)~"
      cp -p -- "$dest" "$b" || fail "cannot back up $dest to $b"
      echo "backup_file=$b" >&3
    fi
  else
    chmod "$(printf '%o' $(( 0666 & ~0$(umask) )))" "$tmp"
  fi
  _e=$(mv -f -- "$tmp" "$dest" 2>&1) || fail "cannot rename into $dest: $_e"
  trap - EXIT
  changed
fi
)SH";
    s += "attrs \"$dest\" " + Q(req.mode) + " " + Q(req.owner) + " " + Q(req.group) + "\n";
    s += "echo \"dest=$dest\" >&3\nstat --printf "
         "'mode=%a\nuid=%u\ngid=%g\nowner=%U\ngroup=%G\nsize=%s\n' -- \"$dest\" >&3\n";
    return s;
  };
  bool inline_content = req.content.size() <= kInlineContent;
  auto run = RunOnNode(ctx, script(inline_content), inline_content ? req.content : "");
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code == 0 && run->meta.count("need_content")) {
    run = RunOnNode(ctx, script(true), req.content);
    if (!run.ok()) return Unreachable(run.status());
  }
  if (run->r.exit_code != 0) return FailedRun(*run, "copy to " + req.dest, ctx);
  ModuleOutcome o;
  o.changed = run->changed;
  o.result["dest"] = run->meta["dest"];
  o.result["checksum"] = sum;
  o.result["size"] = req.content.size();
  std::string mode = run->meta["mode"];
  while (mode.size() < 4) mode = "0" + mode;
  o.result["mode"] = mode;
  o.result["owner"] = run->meta["owner"];
  o.result["group"] = run->meta["group"];
  if (run->meta.count("uid")) o.result["uid"] = std::atoi(run->meta["uid"].c_str());
  if (run->meta.count("gid")) o.result["gid"] = std::atoi(run->meta["gid"].c_str());
  if (run->meta.count("backup_file")) o.result["backup_file"] = run->meta["backup_file"];
  return o;
}

Result<CopyRequest> CopyCommon(const json& args) {
  CopyRequest req;
  req.dest = Str(args, "dest");
  if (req.dest.empty()) return Status::Invalid("dest is required");
  auto mode = ModeArg(args);
  if (!mode.ok()) return mode.status();
  req.mode = *mode;
  req.owner = Str(args, "owner");
  req.group = Str(args, "group");
  auto backup = Bool(args, "backup", false);
  if (!backup.ok()) return backup.status();
  req.backup = *backup;
  auto force = Bool(args, "force", true);
  if (!force.ok()) return force.status();
  req.force = *force;
  return req;
}

std::string Basename(const std::string& p) {
  size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

ModuleOutcome RunCopy(const json& args, ModuleContext& ctx) {
  auto req = CopyCommon(args);
  if (!req.ok()) return Fail("copy: " + req.status().message());
  if (Has(args, "content") == Has(args, "src"))
    return Fail("copy: give exactly one of src and content");
  if (Has(args, "content")) {
    const json& c = args["content"];
    req->content = c.is_string() ? c.get<std::string>() : c.dump();
  } else {
    auto path = FindLocalFile(ctx, Str(args, "src"), "files");
    if (!path.ok()) return Fail("copy: " + path.status().message());
    auto data = ReadLocalFile(*path);
    if (!data.ok()) return Fail("copy: " + data.status().message());
    req->content = std::move(*data);
    req->src_basename = Basename(*path);
  }
  ModuleOutcome o = CopyContent(*req, ctx);
  if (Has(args, "src")) o.result["src"] = Str(args, "src");
  return o;
}

ModuleOutcome RunTemplate(const json& args, ModuleContext& ctx) {
  auto req = CopyCommon(args);
  if (!req.ok()) return Fail("template: " + req.status().message());
  auto path = FindLocalFile(ctx, Str(args, "src"), "templates");
  if (!path.ok()) return Fail("template: " + path.status().message());
  auto text = ReadLocalFile(*path);
  if (!text.ok()) return Fail("template: " + text.status().message());
  auto rendered = RenderTemplate(*text, ctx.vars);
  if (!rendered.ok()) return Fail("template " + *path + ": " + rendered.status().message());
  req->content = std::move(*rendered);
  std::string base = Basename(*path);
  if (base.size() > 3 && base.substr(base.size() - 3) == ".j2") base.resize(base.size() - 3);
  req->src_basename = base;
  ModuleOutcome o = CopyContent(*req, ctx);
  o.result["src"] = *path;
  return o;
}

// ---------------------------------------------------------------------------
// file

ModuleOutcome RunFile(const json& args, ModuleContext& ctx) {
  std::string path = Str(args, "path");
  if (path.empty()) return Fail("file: path is required");
  std::string state = Str(args, "state");
  auto mode = ModeArg(args);
  if (!mode.ok()) return Fail("file: " + mode.status().message());
  auto recurse = Bool(args, "recurse", false);
  auto force = Bool(args, "force", false);
  if (!recurse.ok()) return Fail("file: " + recurse.status().message());
  if (!force.ok()) return Fail("file: " + force.status().message());
  if (*recurse && state != "directory") return Fail("file: recurse needs state=directory");
  std::string src = Str(args, "src");
  if (state == "link" && src.empty()) return Fail("file: src is required for state=link");
  std::string mtime = Str(args, "modification_time", "now"),
              atime = Str(args, "access_time", "now");
  for (const auto& t : {mtime, atime})
    if (t != "now" && t != "preserve")
      return Fail(
          "file: modification_time/access_time: only 'now' and 'preserve' are supported, not '" +
          t + "'");

  std::string s;
  s += "p=" + Q(path) + "; src=" + Q(src) + "; force=" + (*force ? "1" : "0") + "\n";
  s += "mode=" + Q(*mode) + "; owner=" + Q(Str(args, "owner")) +
       "; group=" + Q(Str(args, "group")) + "\n";
  s += "exists() { [ -e \"$p\" ] || [ -L \"$p\" ]; }\n";
  if (state == "absent") {
    s += "if exists; then _e=$(rm -rf -- \"$p\" 2>&1) || fail \"cannot remove $p: $_e\"; changed; "
         "fi\n";
  } else if (state == "directory") {
    s += R"SH(
if exists && [ ! -d "$p" ]; then fail "$p already exists and is not a directory"; fi
if [ ! -d "$p" ]; then _e=$(mkdir -p -- "$p" 2>&1) || fail "cannot create directory $p: $_e"; changed; fi
)SH";
    if (*recurse) {
      s += R"SH(
_snap() { find "$p" -printf '%m %u %g\n' 2>/dev/null | cksum; }
_b=$(_snap)
if [ -n "$mode" ]; then _e=$(chmod -R -- "$mode" "$p" 2>&1) || fail "chmod -R $mode $p: $_e"; fi
if [ -n "$owner" ]; then _e=$(chown -R -- "$owner" "$p" 2>&1) || fail "chown -R $owner $p: $_e"; fi
if [ -n "$group" ]; then _e=$(chgrp -R -- "$group" "$p" 2>&1) || fail "chgrp -R $group $p: $_e"; fi
[ "$(_snap)" = "$_b" ] || changed
)SH";
    } else {
      s += "attrs \"$p\" \"$mode\" \"$owner\" \"$group\"\n";
    }
  } else if (state == "touch") {
    s += "if exists; then :\n";
    if (mtime == "now" || atime == "now") {
      std::string flags = mtime == "now" && atime == "now" ? "" : (mtime == "now" ? "-m " : "-a ");
      s += "  _e=$(touch " + flags +
           "-- \"$p\" 2>&1) || fail \"could not touch $p: $_e\"; changed\n";
    }
    s += "else\n  _e=$(touch -- \"$p\" 2>&1) || fail \"Error, could not touch target: $_e\"; "
         "changed\nfi\n";
    s += "attrs \"$p\" \"$mode\" \"$owner\" \"$group\"\n";
  } else if (state == "link") {
    s += R"SH(
if [ -L "$p" ]; then
  if [ "$(readlink -- "$p")" != "$src" ]; then
    _e=$(ln -sfn -- "$src" "$p" 2>&1) || fail "cannot link $p to $src: $_e"; changed
  fi
else
  if [ "$force" = 0 ]; then
    case "$src" in /*) _t="$src" ;; *) _t="$(dirname -- "$p")/$src" ;; esac
    [ -e "$_t" ] || fail "src file $src does not exist, use force=yes if you really want to create the link $p"
  fi
  if [ -e "$p" ]; then
    [ "$force" = 1 ] || fail "refusing to convert from $( [ -d "$p" ] && echo directory || echo file) to symlink for $p"
    if [ -d "$p" ]; then rmdir -- "$p" 2>/dev/null || fail "the directory $p is not empty, refusing to convert it"; else rm -f -- "$p"; fi
  fi
  _e=$(ln -s -- "$src" "$p" 2>&1) || fail "cannot link $p to $src: $_e"; changed
fi
attrs "$p" "" "$owner" "$group" -h
)SH";
  } else {
    // state file, or unset: the path must exist; only its attributes change.
    s += "exists || fail \"file ($p) is absent, cannot continue\"\n";
    if (state == "file")
      s += "[ -d \"$p\" ] && fail \"file ($p) is a directory, cannot continue\"\n";
    s += "attrs \"$p\" \"$mode\" \"$owner\" \"$group\"\n";
  }
  s += R"SH(
if [ -L "$p" ]; then echo state=link >&3; elif [ -d "$p" ]; then echo state=directory >&3;
elif [ -e "$p" ]; then echo state=file >&3; else echo state=absent >&3; fi
if exists; then stat --printf 'mode=%a\nuid=%u\ngid=%g\nowner=%U\ngroup=%G\nsize=%s\n' -- "$p" >&3; fi
)SH";
  auto run = RunOnNode(ctx, s);
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0) return FailedRun(*run, "file " + path, ctx);
  ModuleOutcome o;
  o.changed = run->changed;
  o.result["path"] = path;
  o.result["state"] = run->meta["state"];
  if (run->meta.count("mode")) {
    std::string m = run->meta["mode"];
    while (m.size() < 4) m = "0" + m;
    o.result["mode"] = m;
    o.result["uid"] = std::atoi(run->meta["uid"].c_str());
    o.result["gid"] = std::atoi(run->meta["gid"].c_str());
    o.result["owner"] = run->meta["owner"];
    o.result["group"] = run->meta["group"];
    o.result["size"] = std::atoll(run->meta["size"].c_str());
  }
  if (state == "link") o.result["src"] = src;
  return o;
}

// ---------------------------------------------------------------------------
// lineinfile

// Splits keeping line endings, as Python's readlines().
std::vector<std::string> ReadLines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      out.push_back(text.substr(start));
      break;
    }
    out.push_back(text.substr(start, nl - start + 1));
    start = nl + 1;
  }
  return out;
}

std::string RStripNl(std::string s) {
  return StripEnds(std::move(s));
}

// re.search on a line as Python sees it: "$" matches before the final "\n".
bool LineSearch(const std::string& line, const std::regex& re) {
  if (!line.empty() && line.back() == '\n')
    return std::regex_search(line.begin(), line.end() - 1, re);
  return std::regex_search(line, re);
}

ModuleOutcome RunLineinfile(const json& args, ModuleContext& ctx) {
  const std::string path = Str(args, "path");
  const std::string state = Str(args, "state", "present");
  const bool has_line = Has(args, "line"), has_re = Has(args, "regexp");
  const std::string line = Str(args, "line");
  if (state == "present" && !has_line)
    return Fail("lineinfile: line is required with state=present");
  if (state == "absent" && !has_line && !has_re)
    return Fail("lineinfile: one of line or regexp is required with state=absent");
  if (Has(args, "insertafter") && Has(args, "insertbefore"))
    return Fail("lineinfile: insertafter and insertbefore are mutually exclusive");
  auto create = Bool(args, "create", false);
  auto firstmatch = Bool(args, "firstmatch", false);
  auto backup = Bool(args, "backup", false);
  if (!create.ok()) return Fail("lineinfile: " + create.status().message());
  if (!firstmatch.ok()) return Fail("lineinfile: " + firstmatch.status().message());
  if (!backup.ok()) return Fail("lineinfile: " + backup.status().message());
  auto mode = ModeArg(args);
  if (!mode.ok()) return Fail("lineinfile: " + mode.status().message());

  auto compile = [](const std::string& what, const std::string& re) -> Result<std::regex> {
    try {
      return std::regex(re, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Status::Invalid(what + ": invalid regular expression '" + re + "': " + e.what());
    }
  };
  std::optional<std::regex> re_m, re_ins;
  if (has_re) {
    auto r = compile("regexp", Str(args, "regexp"));
    if (!r.ok()) return Fail("lineinfile: " + r.status().message());
    re_m = *r;
  }
  std::string insertafter = Str(args, "insertafter"), insertbefore = Str(args, "insertbefore");
  for (const std::string* ins : {&insertafter, &insertbefore}) {
    if (!ins->empty() && *ins != "EOF" && *ins != "BOF") {
      auto r = compile(ins == &insertafter ? "insertafter" : "insertbefore", *ins);
      if (!r.ok()) return Fail("lineinfile: " + r.status().message());
      re_ins = *r;
    }
  }

  // Round trip 1: the file as it is.
  auto read = RunOnNode(ctx, "p=" + Q(path) + R"SH(
if [ -f "$p" ]; then echo exists=1 >&3; cat -- "$p" || fail "cannot read $p"
elif [ -e "$p" ]; then fail "$p exists and is not a regular file"
else echo exists=0 >&3; fi
)SH");
  if (!read.ok()) return Unreachable(read.status());
  if (read->r.exit_code != 0) return FailedRun(*read, "lineinfile " + path, ctx);
  bool exists = read->meta["exists"] == "1";
  ModuleOutcome o;
  o.result["path"] = path;
  if (!exists) {
    if (state == "absent") {
      o.msg = "file not present";
      o.result["found"] = 0;
      return o;
    }
    if (!*create) {
      o = Fail("Destination " + path + " does not exist !");
      o.result["rc"] = 257;
      return o;
    }
  }
  std::vector<std::string> lines = ReadLines(read->r.out);
  bool changed = false;
  std::string msg;
  const std::string nl = "\n";
  if (state == "present") {
    int index0 = -1, index1 = -1;
    bool matched = false;
    if (re_m) {
      for (size_t i = 0; i < lines.size(); ++i)
        if (LineSearch(lines[i], *re_m)) {
          index0 = static_cast<int>(i);
          matched = true;
          if (*firstmatch) break;
        }
    }
    if (!matched) {
      for (size_t i = 0; i < lines.size(); ++i) {
        if (RStripNl(lines[i]) == line) {
          index0 = static_cast<int>(i);  // the exact line: nothing to add
        } else if (re_ins && LineSearch(lines[i], *re_ins)) {
          index1 = static_cast<int>(insertafter.empty() ? i : i + 1);
          if (*firstmatch) break;
        }
      }
    }
    auto add_at = [&](int at) {
      lines.insert(lines.begin() + at, line + nl);
      msg = "line added";
      changed = true;
    };
    if (index0 != -1) {
      if (lines[index0] != line + nl) {
        lines[index0] = line + nl;
        msg = "line replaced";
        changed = true;
      }
    } else if (insertbefore == "BOF" || insertafter == "BOF") {
      add_at(0);
    } else if (insertafter == "EOF" || index1 == -1) {
      if (!lines.empty() && lines.back().back() != '\n' && lines.back().back() != '\r')
        lines.push_back(nl);
      lines.push_back(line + nl);
      msg = "line added";
      changed = true;
    } else if (!insertafter.empty()) {
      if (static_cast<int>(lines.size()) == index1) {
        if (RStripNl(lines[index1 - 1]) != line) {
          if (lines.back().back() != '\n') lines.back() += nl;
          lines.push_back(line + nl), msg = "line added", changed = true;
        }
      } else if (RStripNl(lines[index1]) != line) {
        add_at(index1);
      }
    } else {
      if (index1 <= 0 ? RStripNl(lines[0]) != line : RStripNl(lines[index1 - 1]) != line)
        add_at(index1 < 0 ? 0 : index1);
    }
  } else {
    size_t found = 0;
    std::vector<std::string> kept;
    for (const auto& l : lines) {
      bool m = re_m ? LineSearch(l, *re_m) : RStripNl(l) == line;
      if (m)
        ++found;
      else
        kept.push_back(l);
    }
    o.result["found"] = found;
    if (found) {
      lines = std::move(kept);
      changed = true;
      msg = std::to_string(found) + " line(s) removed";
    }
  }
  o.msg = msg;
  o.changed = changed;
  o.result["backup"] = "";
  bool attrs = !mode->empty() || Has(args, "owner") || Has(args, "group");
  if (!changed && !attrs) return o;

  // Round trip 2: write back (or only fix attributes: the content is the same).
  CopyRequest req;
  req.dest = path;
  for (const auto& l : lines) req.content += l;
  if (!changed) req.content = read->r.out;
  req.mode = *mode;
  req.owner = Str(args, "owner");
  req.group = Str(args, "group");
  req.backup = *backup;
  req.make_parents = *create;
  ModuleOutcome w = CopyContent(req, ctx);
  if (w.failed || w.unreachable) return w;
  o.changed = changed || w.changed;
  if (!changed && w.changed) o.msg = "attributes changed";
  if (w.result.contains("backup_file")) o.result["backup"] = w.result["backup_file"];
  return o;
}

// ---------------------------------------------------------------------------
// user, group

ModuleOutcome RunUser(const json& args, ModuleContext& ctx) {
  const std::string name = Str(args, "name");
  static const std::regex kName("^[a-z_][a-z0-9_.-]*\\$?$", std::regex::icase);
  if (!std::regex_match(name, kName)) return Fail("user: '" + name + "' is not a valid user name");
  const std::string state = Str(args, "state", "present");
  auto append = Bool(args, "append", false);
  auto create_home = Bool(args, "create_home", true);
  auto system = Bool(args, "system", false);
  auto remove = Bool(args, "remove", false);
  for (auto* b : {&append, &create_home, &system, &remove})
    if (!b->ok()) return Fail("user: " + b->status().message());
  std::string lock = "";
  if (Has(args, "password_lock")) {
    auto l = Bool(args, "password_lock", false);
    if (!l.ok()) return Fail("user: " + l.status().message());
    lock = *l ? "1" : "0";
  }
  std::string s;
  s += "n=" + Q(name) + "; state=" + Q(state) + "\n";
  s += "uid=" + Q(Str(args, "uid")) + "; group=" + Q(Str(args, "group")) + "\n";
  s += "groups_set=" + std::string(Has(args, "groups") ? "1" : "0") +
       "; groups=" + Q(Join(List(args, "groups"), ",")) + "; append=" + (*append ? "1" : "0") +
       "\n";
  s += "shell=" + Q(Str(args, "shell")) + "; home=" + Q(Str(args, "home")) + "\n";
  s += "comment_set=" + std::string(Has(args, "comment") ? "1" : "0") +
       "; comment=" + Q(Str(args, "comment")) + "\n";
  s += "password=" + Q(Str(args, "password")) + "; lock=" + lock + "\n";
  s += "create_home=" + std::string(*create_home ? "1" : "0") +
       "; system=" + (*system ? "1" : "0") + "; remove=" + (*remove ? "1" : "0") + "\n";
  s += R"SH(
if getent passwd "$n" >/dev/null; then ex=1; else ex=0; fi
if [ "$state" = absent ]; then
  if [ "$ex" = 1 ]; then
    if [ "$remove" = 1 ]; then _e=$(userdel -r "$n" 2>&1); else _e=$(userdel "$n" 2>&1); fi || fail "userdel $n: $_e"
    changed
  fi
  echo state=absent >&3
  exit 0
fi
set --
if [ "$ex" = 0 ]; then
  [ -n "$uid" ] && set -- "$@" -u "$uid"
  [ -n "$group" ] && set -- "$@" -g "$group"
  [ "$groups_set" = 1 ] && [ -n "$groups" ] && set -- "$@" -G "$groups"
  [ -n "$shell" ] && set -- "$@" -s "$shell"
  [ -n "$home" ] && set -- "$@" -d "$home"
  [ "$comment_set" = 1 ] && set -- "$@" -c "$comment"
  [ -n "$password" ] && set -- "$@" -p "$password"
  [ "$system" = 1 ] && set -- "$@" -r
  if [ "$create_home" = 1 ]; then set -- "$@" -m; else set -- "$@" -M; fi
  _e=$(useradd "$@" "$n" 2>&1) || fail "useradd $n: $_e"
  changed
else
  IFS=: read -r _n _x cuid cgid ccomment chome cshell <<EOF
$(getent passwd "$n")
EOF
  [ -n "$uid" ] && [ "$uid" != "$cuid" ] && set -- "$@" -u "$uid"
  if [ -n "$group" ]; then
    cgname=$(getent group "$cgid" | cut -d: -f1)
    [ "$group" = "$cgid" ] || [ "$group" = "$cgname" ] || set -- "$@" -g "$group"
  fi
  [ -n "$shell" ] && [ "$shell" != "$cshell" ] && set -- "$@" -s "$shell"
  [ -n "$home" ] && [ "$home" != "$chome" ] && set -- "$@" -d "$home"
  [ "$comment_set" = 1 ] && [ "$comment" != "$ccomment" ] && set -- "$@" -c "$comment"
  if [ "$groups_set" = 1 ]; then
    prim=$(id -gn "$n")
    cur=""
    for g in $(id -Gn "$n"); do [ "$g" = "$prim" ] || cur="$cur $g"; done
    need=0
    for g in $(echo "$groups" | tr ',' ' '); do
      case " $cur " in *" $g "*) ;; *) need=1 ;; esac
    done
    if [ "$append" = 0 ]; then
      for g in $cur; do case ",$groups," in *",$g,"*) ;; *) need=1 ;; esac; done
    fi
    if [ "$need" = 1 ]; then
      if [ "$append" = 1 ]; then set -- "$@" -a -G "$groups"; else set -- "$@" -G "$groups"; fi
    fi
  fi
  if [ -n "$password" ]; then
    cpw=$(getent shadow "$n" | cut -d: -f2)
    [ "$cpw" = "$password" ] || [ "$cpw" = "!$password" ] || set -- "$@" -p "$password"
  fi
  if [ $# -gt 0 ]; then _e=$(usermod "$@" "$n" 2>&1) || fail "usermod $n: $_e"; changed; fi
fi
if [ -n "$lock" ]; then
  cpw=$(getent shadow "$n" | cut -d: -f2)
  case "$cpw" in !*) locked=1 ;; *) locked=0 ;; esac
  if [ "$lock" = 1 ] && [ "$locked" = 0 ]; then _e=$(usermod -L "$n" 2>&1) || fail "usermod -L $n: $_e"; changed; fi
  if [ "$lock" = 0 ] && [ "$locked" = 1 ]; then _e=$(usermod -U "$n" 2>&1) || fail "usermod -U $n: $_e"; changed; fi
fi
IFS=: read -r _n _x cuid cgid ccomment chome cshell <<EOF
$(getent passwd "$n")
EOF
printf 'state=present\nuid=%s\ngid=%s\ncomment=%s\nhome=%s\nshell=%s\ngroups=%s\n' "$cuid" "$cgid" \
  "$ccomment" "$chome" "$cshell" "$(id -Gn "$n" | tr ' ' ',')" >&3
)SH";
  auto run = RunOnNode(ctx, s);
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0) return FailedRun(*run, "user " + name, ctx);
  ModuleOutcome o;
  o.changed = run->changed;
  o.result["name"] = name;
  o.result["state"] = run->meta["state"];
  if (run->meta["state"] == "present") {
    o.result["uid"] = std::atoi(run->meta["uid"].c_str());
    o.result["group"] = std::atoi(run->meta["gid"].c_str());
    o.result["comment"] = run->meta["comment"];
    o.result["home"] = run->meta["home"];
    o.result["shell"] = run->meta["shell"];
    o.result["groups"] = run->meta["groups"];
    o.result["system"] = *system;
  }
  return o;
}

ModuleOutcome RunGroup(const json& args, ModuleContext& ctx) {
  const std::string name = Str(args, "name");
  static const std::regex kName("^[a-z_][a-z0-9_.-]*\\$?$", std::regex::icase);
  if (!std::regex_match(name, kName))
    return Fail("group: '" + name + "' is not a valid group name");
  auto system = Bool(args, "system", false);
  if (!system.ok()) return Fail("group: " + system.status().message());
  auto gid = Int(args, "gid", -1);
  if (!gid.ok()) return Fail("group: " + gid.status().message());
  std::string s = "n=" + Q(name) + "; state=" + Q(Str(args, "state", "present")) +
                  "; gid=" + (*gid >= 0 ? std::to_string(*gid) : "") +
                  "; system=" + (*system ? "1" : "0") + "\n";
  s += R"SH(
cur=$(getent group "$n")
if [ "$state" = absent ]; then
  if [ -n "$cur" ]; then _e=$(groupdel "$n" 2>&1) || fail "groupdel $n: $_e"; changed; fi
  echo state=absent >&3; exit 0
fi
if [ -z "$cur" ]; then
  set --
  [ -n "$gid" ] && set -- "$@" -g "$gid"
  [ "$system" = 1 ] && set -- "$@" -r
  _e=$(groupadd "$@" "$n" 2>&1) || fail "groupadd $n: $_e"
  changed
else
  cgid=$(echo "$cur" | cut -d: -f3)
  if [ -n "$gid" ] && [ "$gid" != "$cgid" ]; then
    _e=$(groupmod -g "$gid" "$n" 2>&1) || fail "groupmod $n: $_e"; changed
  fi
fi
echo state=present >&3
echo "gid=$(getent group "$n" | cut -d: -f3)" >&3
)SH";
  auto run = RunOnNode(ctx, s);
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0) return FailedRun(*run, "group " + name, ctx);
  ModuleOutcome o;
  o.changed = run->changed;
  o.result["name"] = name;
  o.result["state"] = run->meta["state"];
  if (run->meta.count("gid")) o.result["gid"] = std::atoi(run->meta["gid"].c_str());
  o.result["system"] = *system;
  return o;
}

// ---------------------------------------------------------------------------
// apt, apt_repository

constexpr const char* kAptGet =
    "apt-get -q -y -o DPkg::Lock::Timeout=120 -o Dpkg::Options::=--force-confdef "
    "-o Dpkg::Options::=--force-confold";

ModuleOutcome RunApt(const json& args, ModuleContext& ctx) {
  const std::string state = Str(args, "state", "present");
  std::vector<std::string> names = List(args, "name");
  static const std::regex kPkg("^[a-z0-9][a-z0-9+.\\-]*(:[a-z0-9]+)?(=[A-Za-z0-9.+~:*\\-]+)?$");
  for (const auto& n : names)
    if (!std::regex_match(n, kPkg))
      return Fail("apt: '" + n + "' is not a package name (name or name=version)");
  // As in Ansible, cache_valid_time implies update_cache.
  auto update = Bool(args, "update_cache", Has(args, "cache_valid_time"));
  auto purge = Bool(args, "purge", false);
  auto autoremove = Bool(args, "autoremove", false);
  auto valid = Int(args, "cache_valid_time", 0);
  for (auto* b : {&update, &purge, &autoremove})
    if (!b->ok()) return Fail("apt: " + b->status().message());
  if (!valid.ok()) return Fail("apt: " + valid.status().message());
  std::string recommends;
  if (Has(args, "install_recommends")) {
    auto r = Bool(args, "install_recommends", true);
    if (!r.ok()) return Fail("apt: " + r.status().message());
    recommends = *r ? " --install-recommends" : " --no-install-recommends";
  }
  const std::string deb = Str(args, "deb");
  if (names.empty() && deb.empty() && !*update)
    return Fail("apt: one of name, deb or update_cache is required");

  std::string s = "export DEBIAN_FRONTEND=noninteractive\n";
  s += "command -v dpkg-query >/dev/null 2>&1 || fail \"apt: dpkg-query not found on the node (not "
       "Debian or Ubuntu?)\"\n";
  s += "valid=" + std::to_string(*valid) + "\n";
  s += R"SH(
stamp=/var/lib/apt/periodic/update-success-stamp
[ -e "$stamp" ] || stamp=/var/lib/apt/lists
cache_time() { stat -c %Y "$stamp" 2>/dev/null || echo 0; }
installed() { _s=$(dpkg-query -W -f '${Status}' "$1" 2>/dev/null) && [ "${_s##* }" = installed ]; }
# has PKG[=VERSION]: installed, at that version (a glob) when one is given
has() {
  _p=${1%%=*}
  installed "$_p" || return 1
  case "$1" in *=*) ;; *) return 0 ;; esac
  _v=$(dpkg-query -W -f '${Version}' "$_p" 2>/dev/null)
  case "$_v" in ${1#*=}) return 0 ;; esac
  return 1
}
aptrun() {
  _o=$(eval "$APT \"\$@\"" 2>&1); _rc=$?
  printf '%s\n' "$_o"
  [ $_rc = 0 ] || fail "apt-get $1 failed: $(printf '%s' "$_o" | tail -n 5)"
  printf '%s' "$_o" | grep -q '^0 upgraded, 0 newly installed, 0 to remove' || changed
}
)SH";
  s += std::string("APT=") + Q(std::string(kAptGet) + recommends) + "\n";
  if (*update) {
    s += R"SH(
before=$(cache_time)
if [ "$valid" -le 0 ] || [ $(( $(date +%s) - before )) -ge "$valid" ]; then
  _o=$(apt-get -q update 2>&1) || fail "Failed to update apt cache: $(printf '%s' "$_o" | tail -n 5)"
  [ -e /var/lib/apt/periodic/update-success-stamp ] && stamp=/var/lib/apt/periodic/update-success-stamp
  [ "$(cache_time)" != "$before" ] && echo cache_updated=1 >&3
fi
echo "cache_update_time=$(cache_time)" >&3
)SH";
  }
  std::string pkgs;
  for (const auto& n : names) pkgs += " " + Q(n);
  if (!names.empty()) {
    s += "set --" + pkgs + "\ntodo=\"\"\n";
    if (state == "present") {
      s += "for p; do has \"$p\" || todo=\"$todo $p\"; done\n";
      s += "if [ -n \"$todo\" ]; then aptrun install $todo; fi\n";
    } else if (state == "latest") {
      s += R"SH(
for p; do
  _p=${p%%=*}
  if ! installed "$_p"; then todo="$todo $p"; continue; fi
  _i=$(dpkg-query -W -f '${Version}' "$_p")
  _c=$(apt-cache policy "$_p" 2>/dev/null | sed -n 's/^ *Candidate: //p')
  [ -n "$_c" ] && [ "$_c" != "(none)" ] && [ "$_c" != "$_i" ] && todo="$todo $p"
done
if [ -n "$todo" ]; then aptrun install $todo; fi
)SH";
    } else {
      s += "for p; do installed \"${p%%=*}\" && todo=\"$todo ${p%%=*}\"; done\n";
      s += "if [ -n \"$todo\" ]; then aptrun remove" + std::string(*purge ? " --purge" : "") +
           (*autoremove ? " --autoremove" : "") + " $todo; fi\n";
    }
    s += "echo \"packages=$todo\" >&3\n";
  }
  if (!deb.empty()) {
    s += "deb=" + Q(deb) + "\n";
    s += R"SH(
[ -f "$deb" ] || fail "deb file $deb not found on the node"
case "$deb" in /*) ;; *) deb="./$deb" ;; esac
_p=$(dpkg-deb -f "$deb" Package) || fail "$deb is not a Debian package"
_v=$(dpkg-deb -f "$deb" Version)
if ! installed "$_p" || [ "$(dpkg-query -W -f '${Version}' "$_p")" != "$_v" ]; then aptrun install "$deb"; fi
)SH";
  }
  auto run = RunOnNode(ctx, s, "", std::max(ctx.timeout_ms, 1800 * 1000));
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0) return FailedRun(*run, "apt", ctx);
  ModuleOutcome o;
  o.changed = run->changed;
  bool cache_updated = run->meta.count("cache_updated") > 0;
  if (names.empty() && deb.empty()) o.changed = cache_updated;
  o.result["cache_updated"] = cache_updated;
  if (run->meta.count("cache_update_time"))
    o.result["cache_update_time"] = std::atoll(run->meta["cache_update_time"].c_str());
  std::string out = StripEnds(run->r.out);
  o.result["stdout"] = out;
  o.result["stderr"] = StripEnds(run->r.err);
  o.result["stdout_lines"] = Lines(out);
  o.result["stderr_lines"] = Lines(StripEnds(run->r.err));
  std::stringstream ss(run->meta["packages"]);
  std::vector<std::string> done;
  for (std::string p; ss >> p;) done.push_back(p);
  o.result["packages"] = done;
  return o;
}

// Ansible's name for the .list file of a plain deb line: host and path of the
// URL with every other character made "_".
std::string SuggestRepoFilename(const std::string& line) {
  std::string l = std::regex_replace(line, std::regex("\\[[^\\]]+\\]"), "");
  l = std::regex_replace(l, std::regex("\\w+://"), "");
  std::stringstream ss(l);
  std::string part, first;
  while (ss >> part)
    if (part != "deb" && part != "deb-src") {
      first = part;
      break;
    }
  size_t at = first.find('@');
  if (at != std::string::npos) first = first.substr(at + 1);
  std::string out;
  bool sep = false;
  for (char c : first) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      if (sep && !out.empty()) out += '_';
      out += c;
      sep = false;
    } else {
      sep = true;
    }
  }
  return out;
}

ModuleOutcome RunAptRepository(const json& args, ModuleContext& ctx) {
  std::string repo = Str(args, "repo");
  const std::string state = Str(args, "state", "present");
  auto update = Bool(args, "update_cache", true);
  if (!update.ok()) return Fail("apt_repository: " + update.status().message());
  auto mode = ModeArg(args);
  if (!mode.ok()) return Fail("apt_repository: " + mode.status().message());
  std::string signed_by = Str(args, "signed_by");
  std::string filename = Str(args, "filename");
  std::string s;
  if (repo.rfind("ppa:", 0) == 0) {
    static const std::regex kPpa("^ppa:([A-Za-z0-9._+-]+)(/([A-Za-z0-9._+-]+))?$");
    std::smatch m;
    if (!std::regex_match(repo, m, kPpa))
      return Fail("apt_repository: '" + repo + "' is not ppa:owner/name");
    std::string owner = m[1], name = m[3].matched ? std::string(m[3]) : "ppa";
    s += "codename=" + Q(Str(args, "codename")) + "\n";
    s += R"SH(
if [ -z "$codename" ] && [ -r /etc/os-release ]; then
  codename=$(. /etc/os-release; echo "${UBUNTU_CODENAME:-$VERSION_CODENAME}")
fi
[ -n "$codename" ] || fail "apt_repository: cannot tell the node's release codename: give codename"
)SH";
    std::string opts = signed_by.empty() ? "" : "[signed-by=" + signed_by + "] ";
    s += "line=" +
         Q("deb " + opts + "https://ppa.launchpadcontent.net/" + owner + "/" + name + "/ubuntu ") +
         "\"$codename main\"\n";
    s += "name=" +
         (filename.empty() ? Q(owner + "-ubuntu-" + name + "-") + "\"$codename\"" : Q(filename)) +
         "\n";
  } else {
    std::stringstream ss(repo);
    std::string word, norm;
    while (ss >> word) norm += (norm.empty() ? "" : " ") + word;
    if (norm.rfind("deb ", 0) != 0 && norm.rfind("deb-src ", 0) != 0)
      return Fail(
          "apt_repository: repo must be a 'deb ...' or 'deb-src ...' line or ppa:owner/name, not "
          "'" +
          repo + "'");
    if (!signed_by.empty() && norm.find(" [") == std::string::npos) {
      size_t sp = norm.find(' ');
      norm = norm.substr(0, sp) + " [signed-by=" + signed_by + "]" + norm.substr(sp);
    }
    s += "line=" + Q(norm) + "\n";
    s += "name=" + Q(filename.empty() ? SuggestRepoFilename(norm) : filename) + "\n";
  }
  s += "state=" + Q(state) + "; mode=" + Q(mode->empty() ? "0644" : *mode) +
       "; update=" + (*update ? "1" : "0") + "\n";
  s += R"SH(
SP=/etc/apt/sources.list.d/; SL=/etc/apt/sources.list
if command -v apt-config >/dev/null 2>&1; then eval "$(apt-config shell SP Dir::Etc::sourceparts/d SL Dir::Etc::sourcelist/f)"; fi
case "$name" in */*) f="$name" ;; *.list) f="${SP%/}/$name" ;; *) f="${SP%/}/$name.list" ;; esac
norm() { sed -e 's/#.*//' -e 's/[[:space:]][[:space:]]*/ /g' -e 's/^ //' -e 's/ $//'; }
want=$(printf '%s\n' "$line" | norm)
found=""
for g in "$SL" "${SP%/}"/*.list; do
  [ -f "$g" ] || continue
  if norm < "$g" | grep -qxF -- "$want"; then found="$found
$g"; fi
done
if [ "$state" = present ]; then
  if [ -z "$found" ]; then
    d=$(dirname -- "$f")
    [ -d "$d" ] || { _e=$(mkdir -p -- "$d" 2>&1) || fail "mkdir $d: $_e"; }
    tmp=$(mktemp -- "$d/.provisiond.XXXXXXXX") || fail "cannot create a file in $d"
    trap 'rm -f -- "$tmp"' EXIT
    { [ -f "$f" ] && cat -- "$f"; printf '%s\n' "$line"; } > "$tmp" || fail "cannot write $tmp"
    chmod -- "$mode" "$tmp" || fail "chmod $mode $tmp"
    _e=$(mv -f -- "$tmp" "$f" 2>&1) || fail "cannot rename into $f: $_e"
    trap - EXIT
    changed
  fi
else
  printf '%s\n' "$found" | while IFS= read -r g; do
    [ -n "$g" ] || continue
    tmp=$(mktemp -- "$g.XXXXXXXX") || fail "cannot create a file next to $g"
    while IFS= read -r l || [ -n "$l" ]; do
      [ "$(printf '%s\n' "$l" | norm)" = "$want" ] || printf '%s\n' "$l"
    done < "$g" > "$tmp"
    if [ "$g" != "$SL" ] && ! grep -q '[^[:space:]]' "$tmp"; then rm -f -- "$tmp" "$g"
    else chmod --reference="$g" "$tmp"; mv -f -- "$tmp" "$g" || fail "cannot rewrite $g"; fi
  done
  [ -n "$found" ] && changed
fi
echo "repo=$line" >&3
echo "sources_file=$f" >&3
)SH";
  s += "if [ \"$update\" = 1 ] && [ \"$state\" = present ] && [ -z \"$found\" ] || { [ \"$update\" "
       "= 1 ] && [ \"$state\" = absent ] && [ -n \"$found\" ]; }; then\n"
       "  _o=$(apt-get -q update 2>&1) || fail \"apt-get update failed after changing $f: $(printf "
       "'%s' \"$_o\" | tail -n 5)\"\n"
       "  echo cache_updated=1 >&3\nfi\n";
  auto run = RunOnNode(ctx, s, "", std::max(ctx.timeout_ms, 600 * 1000));
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0) return FailedRun(*run, "apt_repository", ctx);
  ModuleOutcome o;
  o.changed = run->changed;
  o.result["repo"] = run->meta["repo"];
  o.result["sources_file"] = run->meta["sources_file"];
  o.result["state"] = state;
  o.result["cache_updated"] = run->meta.count("cache_updated") > 0;
  return o;
}

// ---------------------------------------------------------------------------
// get_url

ModuleOutcome RunGetUrl(const json& args, ModuleContext& ctx) {
  const std::string url = Str(args, "url"), dest = Str(args, "dest");
  static const std::regex kUrl("^(https?|ftp|file)://[^\\s]+$");
  if (!std::regex_match(url, kUrl))
    return Fail("get_url: '" + url + "' is not an http(s), ftp or file URL");
  auto force = Bool(args, "force", false);
  auto certs = Bool(args, "validate_certs", true);
  auto timeout = Int(args, "timeout", 10);
  if (!force.ok()) return Fail("get_url: " + force.status().message());
  if (!certs.ok()) return Fail("get_url: " + certs.status().message());
  if (!timeout.ok()) return Fail("get_url: " + timeout.status().message());
  auto mode = ModeArg(args);
  if (!mode.ok()) return Fail("get_url: " + mode.status().message());
  std::string algo, sum;
  if (Has(args, "checksum")) {
    static const std::regex kSum("^(md5|sha1|sha224|sha256|sha384|sha512):([0-9a-fA-F]+)$");
    std::smatch m;
    std::string c = Str(args, "checksum");
    if (!std::regex_match(c, m, kSum))
      return Fail("get_url: checksum must be <algorithm>:<hex digest> (sha256:...), not '" + c +
                  "'");
    algo = m[1];
    sum = m[2];
    std::transform(sum.begin(), sum.end(), sum.begin(), ::tolower);
  }
  std::string base = url.substr(url.find("://") + 3);
  base = base.substr(0, base.find_first_of("?#"));
  base = Basename(base);
  std::string s = "url=" + Q(url) + "; dest=" + Q(dest) + "; base=" + Q(base) + "\n";
  s += "force=" + std::string(*force ? "1" : "0") + "; algo=" + algo + "; sum=" + sum +
       "; t=" + std::to_string(*timeout) + "; insecure=" + (*certs ? "0" : "1") + "\n";
  s += R"SH(
digest() { _d=$(${algo}sum < "$1") || return 1; echo "${_d%% *}"; }
if [ -d "$dest" ]; then
  [ -n "$base" ] || fail "cannot name a file in directory $dest after URL $url"
  dest="${dest%/}/$base"
fi
dir=$(dirname -- "$dest")
[ -d "$dir" ] || fail "Destination dir $dir does not exist"
fetch=1
if [ -f "$dest" ] && [ "$force" = 0 ]; then
  if [ -z "$sum" ] || [ "$(digest "$dest")" = "$sum" ]; then fetch=0; fi
fi
if [ "$fetch" = 1 ]; then
  tmp=$(mktemp -- "$dir/.provisiond.XXXXXXXX") || fail "cannot create a file in $dir"
  trap 'rm -f -- "$tmp"' EXIT
  if command -v curl >/dev/null 2>&1; then
    k=""; [ "$insecure" = 1 ] && k=-k
    _e=$(curl -fsSL $k --connect-timeout "$t" -o "$tmp" "$url" 2>&1) || fail "Request failed: $url: $_e"
  elif command -v wget >/dev/null 2>&1; then
    k=""; [ "$insecure" = 1 ] && k=--no-check-certificate
    _e=$(wget -q $k -T "$t" -O "$tmp" "$url" 2>&1) || fail "Request failed: $url: $_e"
  else
    fail "get_url needs curl or wget on the node"
  fi
  if [ -n "$sum" ]; then
    got=$(digest "$tmp")
    [ "$got" = "$sum" ] || fail "The checksum for $dest did not match $sum; it was $got."
  fi
  if [ -f "$dest" ] && cmp -s -- "$tmp" "$dest"; then
    rm -f -- "$tmp"
  else
    if [ -f "$dest" ]; then chmod --reference="$dest" "$tmp"; chown --reference="$dest" "$tmp" 2>/dev/null
    else chmod "$(printf '%o' $(( 0666 & ~0$(umask) )))" "$tmp"; fi
    _e=$(mv -f -- "$tmp" "$dest" 2>&1) || fail "cannot rename into $dest: $_e"
    changed
  fi
  trap - EXIT
fi
)SH";
  s += "attrs \"$dest\" " + Q(*mode) + " " + Q(Str(args, "owner")) + " " + Q(Str(args, "group")) +
       "\n";
  s += "echo \"dest=$dest\" >&3\necho \"size=$(stat -c %s -- \"$dest\")\" >&3\n"
       "_c=$(sha256sum < \"$dest\"); echo \"checksum_dest=${_c%% *}\" >&3\n";
  auto run =
      RunOnNode(ctx, s, "", std::max(ctx.timeout_ms, static_cast<int>(*timeout) * 1000 + 5000));
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0) return FailedRun(*run, "get_url " + url, ctx);
  ModuleOutcome o;
  o.changed = run->changed;
  o.result["url"] = url;
  o.result["dest"] = run->meta["dest"];
  o.result["size"] = std::atoll(run->meta["size"].c_str());
  o.result["checksum_dest"] = run->meta["checksum_dest"];
  o.msg = o.changed ? "OK (" + run->meta["size"] + " bytes)" : "file already exists";
  return o;
}

// ---------------------------------------------------------------------------
// systemd, service

// The systemd part: `n` is the unit; state/enabled/masked/reload as given.
constexpr const char* kSystemdScript = R"SH(
command -v systemctl >/dev/null 2>&1 || fail "systemctl not found on the node: it does not run systemd"
if [ "$daemon_reload" = 1 ]; then _e=$(systemctl daemon-reload 2>&1) || fail "systemctl daemon-reload: $_e"; fi
[ -n "$n" ] || exit 0
load=$(systemctl show -p LoadState --value -- "$n" 2>/dev/null)
if [ "$load" = not-found ] && [ "$masked" != 0 ]; then fail "Could not find the requested service $n: host"; fi
if [ -n "$masked" ]; then
  cur=$(systemctl is-enabled -- "$n" 2>/dev/null)
  case "$cur" in masked*) ism=1 ;; *) ism=0 ;; esac
  if [ "$masked" = 1 ] && [ "$ism" = 0 ]; then _e=$(systemctl mask -- "$n" 2>&1) || fail "systemctl mask $n: $_e"; changed; fi
  if [ "$masked" = 0 ] && [ "$ism" = 1 ]; then _e=$(systemctl unmask -- "$n" 2>&1) || fail "systemctl unmask $n: $_e"; changed; fi
fi
if [ -n "$enabled" ]; then
  if systemctl is-enabled --quiet -- "$n" 2>/dev/null; then ise=1; else ise=0; fi
  if [ "$enabled" = 1 ] && [ "$ise" = 0 ]; then _e=$(systemctl enable -- "$n" 2>&1) || fail "systemctl enable $n: $_e"; changed; fi
  if [ "$enabled" = 0 ] && [ "$ise" = 1 ]; then _e=$(systemctl disable -- "$n" 2>&1) || fail "systemctl disable $n: $_e"; changed; fi
fi
act=$(systemctl show -p ActiveState --value -- "$n" 2>/dev/null)
case "$act" in active|activating|reloading) running=1 ;; *) running=0 ;; esac
case "$state" in
  started) if [ "$running" = 0 ]; then _e=$(systemctl start -- "$n" 2>&1) || fail "Unable to start service $n: $_e"; changed; fi ;;
  stopped) if [ "$running" = 1 ]; then _e=$(systemctl stop -- "$n" 2>&1) || fail "Unable to stop service $n: $_e"; changed; fi ;;
  restarted) _e=$(systemctl restart -- "$n" 2>&1) || fail "Unable to restart service $n: $_e"; changed ;;
  reloaded)
    if [ "$running" = 0 ]; then _e=$(systemctl start -- "$n" 2>&1) || fail "Unable to start service $n: $_e"
    else _e=$(systemctl reload -- "$n" 2>&1) || fail "Unable to reload service $n: $_e"; fi
    changed ;;
esac
systemctl show -p ActiveState -p SubState -p UnitFileState -p LoadState -- "$n" 2>/dev/null | sed 's/^/status./' >&3
)SH";

// Without systemd: the `service` command and update-rc.d.
constexpr const char* kSysvScript = R"SH(
command -v service >/dev/null 2>&1 || fail "neither systemd nor the service command on the node"
if service "$n" status >/dev/null 2>&1; then running=1; else running=0; fi
case "$state" in
  started) if [ "$running" = 0 ]; then _e=$(service "$n" start 2>&1) || fail "Unable to start service $n: $_e"; changed; fi ;;
  stopped) if [ "$running" = 1 ]; then _e=$(service "$n" stop 2>&1) || fail "Unable to stop service $n: $_e"; changed; fi ;;
  restarted) _e=$(service "$n" restart 2>&1) || fail "Unable to restart service $n: $_e"; changed ;;
  reloaded) _e=$(service "$n" reload 2>&1) || fail "Unable to reload service $n: $_e"; changed ;;
esac
if [ -n "$enabled" ]; then
  if ls /etc/rc[2345].d/S??"$n" >/dev/null 2>&1; then ise=1; else ise=0; fi
  if [ "$enabled" = 1 ] && [ "$ise" = 0 ]; then _e=$(update-rc.d "$n" defaults 2>&1 && update-rc.d "$n" enable 2>&1) || fail "update-rc.d $n enable: $_e"; changed; fi
  if [ "$enabled" = 0 ] && [ "$ise" = 1 ]; then _e=$(update-rc.d "$n" disable 2>&1) || fail "update-rc.d $n disable: $_e"; changed; fi
fi
if service "$n" status >/dev/null 2>&1; then echo status.ActiveState=active >&3; else echo status.ActiveState=inactive >&3; fi
)SH";

ModuleOutcome RunService(const json& args, ModuleContext& ctx, bool systemd_module) {
  const std::string name = Str(args, "name");
  auto tri = [&](const char* key, std::string& out) -> Status {
    if (!Has(args, key)) return Status::Ok();
    auto b = Bool(args, key, false);
    if (!b.ok()) return b.status();
    out = *b ? "1" : "0";
    return Status::Ok();
  };
  std::string enabled, masked, reload;
  for (auto [k, v] : {std::pair<const char*, std::string*>{"enabled", &enabled},
                      {"masked", &masked},
                      {"daemon_reload", &reload}}) {
    Status st = tri(k, *v);
    if (!st.ok())
      return Fail(std::string(systemd_module ? "systemd: " : "service: ") + st.message());
  }
  const std::string state = Str(args, "state");
  if (state.empty() && enabled.empty() && masked.empty() && reload != "1")
    return Fail("one of state, enabled, masked or daemon_reload is required");
  if (name.empty() && (!state.empty() || !enabled.empty() || !masked.empty()))
    return Fail("name is required with state, enabled or masked");
  std::string s = "n=" + Q(name) + "; state=" + Q(state) + "; enabled=" + enabled +
                  "; masked=" + masked + "; daemon_reload=" + reload + "\n";
  if (systemd_module) {
    s += kSystemdScript;
  } else {
    s += "if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then\n";
    s += kSystemdScript;
    s += "\nelse\n";
    s += kSysvScript;
    s += "\nfi\n";
  }
  auto run = RunOnNode(ctx, s);
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0)
    return FailedRun(*run, (systemd_module ? "systemd " : "service ") + name, ctx);
  ModuleOutcome o;
  o.changed = run->changed;
  o.result["name"] = name;
  if (!state.empty()) o.result["state"] = state;
  if (!enabled.empty()) o.result["enabled"] = enabled == "1";
  json status = json::object();
  for (const auto& [k, v] : run->meta_list)
    if (k.rfind("status.", 0) == 0) status[k.substr(7)] = v;
  o.result["status"] = status;
  return o;
}

ModuleOutcome RunSystemd(const json& args, ModuleContext& ctx) {
  return RunService(args, ctx, true);
}
ModuleOutcome RunServiceModule(const json& args, ModuleContext& ctx) {
  return RunService(args, ctx, false);
}

// ---------------------------------------------------------------------------
// wait_for

ModuleOutcome RunWaitFor(const json& args, ModuleContext& ctx) {
  auto timeout = Int(args, "timeout", 300);
  auto delay = Int(args, "delay", 0);
  auto connect = Int(args, "connect_timeout", 5);
  auto port = Int(args, "port", 0);
  for (auto* v : {&timeout, &delay, &connect, &port})
    if (!v->ok()) return Fail("wait_for: " + v->status().message());
  std::string sleep = Str(args, "sleep", "1");
  static const std::regex kNum("^[0-9]+(\\.[0-9]+)?$");
  if (!std::regex_match(sleep, kNum))
    return Fail("wait_for: sleep: '" + sleep + "' is not a number of seconds");
  const std::string path = Str(args, "path"), host = Str(args, "host", "127.0.0.1");
  std::string state = Str(args, "state", "started");
  if (Has(args, "port") && !path.empty())
    return Fail("wait_for: port and path are mutually exclusive");
  if (Has(args, "port") && (*port < 1 || *port > 65535))
    return Fail("wait_for: port must be 1..65535");
  if (Has(args, "search_regex") && path.empty())
    return Fail("wait_for: search_regex is supported with path only");
  if (!path.empty() && (state == "started" || state == "present")) state = "present";
  if (!path.empty() && state == "stopped") state = "absent";
  std::string s = "host=" + Q(host) + "; port=" + std::to_string(*port) + "; path=" + Q(path) +
                  "; state=" + Q(state) + "; timeout=" + std::to_string(*timeout) +
                  "; delay=" + std::to_string(*delay) +
                  "; ct=" + std::to_string(std::max<long long>(1, *connect)) + "; pause=" + sleep +
                  "; re=" + Q(Str(args, "search_regex")) + "; usermsg=" + Q(Str(args, "msg")) +
                  "\n";
  if (Has(args, "port")) {
    s += R"SH(
check() {
  if command -v nc >/dev/null 2>&1; then nc -z -w "$ct" "$host" "$port" >/dev/null 2>&1
  elif command -v bash >/dev/null 2>&1; then timeout "$ct" bash -c 'exec 9<>"/dev/tcp/$0/$1"' "$host" "$port" >/dev/null 2>&1
  else fail "wait_for needs nc or bash on the node to test a port"; fi
}
what="$host:$port"
)SH";
  } else if (!path.empty()) {
    s += R"SH(
check() { [ -e "$path" ] && { [ -z "$re" ] || grep -Eq -- "$re" "$path" 2>/dev/null; }; }
what="file $path"
[ -n "$re" ] && what="$what to contain $re"
)SH";
  } else {
    s += "check() { false; }\nwhat=\"\"\n";
  }
  s += R"SH(
[ "$delay" -gt 0 ] && sleep "$delay"
start=$(date +%s)
while :; do
  if [ -z "$what" ]; then
    [ $(( $(date +%s) - start )) -ge "$timeout" ] && break
  else
    case "$state" in
      started|present) check && break ;;
      stopped|absent) check || break ;;
    esac
    if [ $(( $(date +%s) - start )) -ge "$timeout" ]; then
      echo "elapsed=$(( $(date +%s) - start ))" >&3
      [ -n "$usermsg" ] && fail "$usermsg"
      case "$state" in
        stopped|absent) fail "Timeout when waiting for $what to $( [ "$state" = absent ] && echo be absent || echo stop)" ;;
        *) fail "Timeout when waiting for $what" ;;
      esac
    fi
  fi
  sleep "$pause"
done
echo "elapsed=$(( $(date +%s) - start ))" >&3
)SH";
  auto run =
      RunOnNode(ctx, s, "", std::max<long long>(ctx.timeout_ms, (*timeout + *delay + 30) * 1000));
  if (!run.ok()) return Unreachable(run.status());
  ModuleOutcome o;
  o.result["elapsed"] = std::atoi(run->meta["elapsed"].c_str());
  o.result["state"] = state;
  if (Has(args, "port")) o.result["port"] = *port;
  if (!path.empty()) o.result["path"] = path;
  if (run->r.exit_code != 0) {
    ModuleOutcome f = FailedRun(*run, "wait_for", ctx);
    f.result["elapsed"] = o.result["elapsed"];
    return f;
  }
  return o;
}

// ---------------------------------------------------------------------------
// reboot
//
// The module only issues the reboot: the script starts a detached
// `shutdown -r` a second later (pre_reboot_delay more) so that it returns
// first, and reports changed with result.rebooted = true and
// result.boot_id_before. What the runner must do when it sees rebooted:
//   1. drop the node's session (it is about to break);
//   2. wait post_reboot_delay (result.post_reboot_delay), then reconnect with
//      retries, each attempt bounded by result.connect_timeout, the whole
//      bounded by result.reboot_timeout (default 600 s) — failing the task
//      with "timed out waiting for the node to come back" past it;
//   3. read /proc/sys/kernel/random/boot_id: it must differ from
//      boot_id_before (else the node did not reboot yet: keep waiting);
//   4. run result.test_command (default "whoami"); non-zero fails the task;
//   5. set result.elapsed (seconds) and continue with the next task.
// (play_runner.cc instead ends the node's run on rebooted: a netbooted node
// runs from RAM, phones home after the reboot and is configured again.)

ModuleOutcome RunReboot(const json& args, ModuleContext& ctx) {
  auto timeout = Int(args, "reboot_timeout", 600);
  auto pre = Int(args, "pre_reboot_delay", 0);
  auto post = Int(args, "post_reboot_delay", 0);
  auto connect = Int(args, "connect_timeout", 30);
  for (auto* v : {&timeout, &pre, &post, &connect})
    if (!v->ok()) return Fail("reboot: " + v->status().message());
  std::string msg = Str(args, "msg", "Reboot initiated by provisiond");
  std::string s = "msg=" + Q(msg) + "; pre=" + std::to_string(std::max<long long>(0, *pre)) + "\n";
  s += R"SH(
echo "boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)" >&3
run_reboot='sleep $((1 + $1)); shutdown -r now "$0" || systemctl reboot || reboot'
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c "$run_reboot" "$msg" "$pre" </dev/null >/dev/null 2>&1 3>&- &
else
  nohup sh -c "$run_reboot" "$msg" "$pre" </dev/null >/dev/null 2>&1 3>&- &
fi
)SH";
  auto run = RunOnNode(ctx, s);
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0) return FailedRun(*run, "reboot", ctx);
  ModuleOutcome o;
  o.changed = true;
  o.msg = "reboot issued; the runner reconnects";
  o.result["rebooted"] = true;
  o.result["boot_id_before"] = run->meta["boot_id"];
  o.result["reboot_timeout"] = *timeout;
  o.result["post_reboot_delay"] = *post;
  o.result["connect_timeout"] = *connect;
  o.result["test_command"] = Str(args, "test_command", "whoami");
  return o;
}

// ---------------------------------------------------------------------------
// stat

ModuleOutcome RunStat(const json& args, ModuleContext& ctx) {
  const std::string path = Str(args, "path");
  auto follow = Bool(args, "follow", false);
  auto get_checksum = Bool(args, "get_checksum", true);
  if (!follow.ok()) return Fail("stat: " + follow.status().message());
  if (!get_checksum.ok()) return Fail("stat: " + get_checksum.status().message());
  std::string algo = Str(args, "checksum_algorithm", "sha1");
  std::string s = "p=" + Q(path) + "; L=" + (*follow ? "-L" : "") + "; algo=" + Q(algo) +
                  "; sum=" + (*get_checksum ? "1" : "0") + "\n";
  s += R"SH(
if [ -e "$p" ] || [ -L "$p" ]; then
  echo exists=1 >&3
  stat $L --printf 'ftype=%F\nmode=%a\nuid=%u\ngid=%g\npw_name=%U\ngr_name=%G\nsize=%s\nmtime=%Y\natime=%X\nctime=%Z\ninode=%i\ndev=%d\nnlink=%h\n' -- "$p" >&3 || fail "cannot stat $p"
  if [ -L "$p" ]; then echo "lnk_source=$(readlink -f -- "$p")" >&3; echo "lnk_target=$(readlink -- "$p")" >&3; fi
  [ -r "$p" ] && echo readable=1 >&3
  [ -w "$p" ] && echo writeable=1 >&3
  [ -x "$p" ] && echo executable=1 >&3
  if [ "$sum" = 1 ] && [ -f "$p" ] && [ -r "$p" ]; then
    if [ -n "$L" ] || [ ! -L "$p" ]; then _c=$(${algo}sum < "$p") && echo "checksum=${_c%% *}" >&3; fi
  fi
else
  echo exists=0 >&3
fi
)SH";
  auto run = RunOnNode(ctx, s);
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0) return FailedRun(*run, "stat " + path, ctx);
  auto& m = run->meta;
  json st = json::object();
  st["exists"] = m["exists"] == "1";
  if (m["exists"] == "1") {
    const std::string t = m["ftype"];
    st["path"] = path;
    std::string mode = m["mode"];
    while (mode.size() < 4) mode = "0" + mode;
    st["mode"] = mode;
    st["isdir"] = t == "directory";
    st["isreg"] = t.find("regular") != std::string::npos;
    st["islnk"] = t == "symbolic link";
    st["ischr"] = t == "character special file";
    st["isblk"] = t == "block special file";
    st["isfifo"] = t == "fifo";
    st["issock"] = t == "socket";
    for (const char* k : {"uid", "gid", "size", "inode", "dev", "nlink"})
      st[k] = std::atoll(m[k].c_str());
    for (const char* k : {"mtime", "atime", "ctime"}) st[k] = std::atof(m[k].c_str());
    st["pw_name"] = m["pw_name"];
    st["gr_name"] = m["gr_name"];
    st["readable"] = m.count("readable") > 0;
    st["writeable"] = m.count("writeable") > 0;
    st["executable"] = m.count("executable") > 0;
    if (m.count("lnk_source")) {
      st["lnk_source"] = m["lnk_source"];
      st["lnk_target"] = m["lnk_target"];
    }
    if (m.count("checksum")) st["checksum"] = m["checksum"];
  }
  ModuleOutcome o;
  o.result["stat"] = st;
  return o;
}

// ---------------------------------------------------------------------------
// Modules that never touch the node (except ping).

ModuleOutcome RunAssert(const json& args, ModuleContext& ctx) {
  std::vector<std::string> conds;
  const json& that = args["that"];
  if (that.is_array()) {
    for (const auto& c : that) conds.push_back(c.is_string() ? c.get<std::string>() : c.dump());
  } else {
    conds.push_back(that.is_string() ? that.get<std::string>() : that.dump());
  }
  auto quiet = Bool(args, "quiet", false);
  if (!quiet.ok()) return Fail("assert: " + quiet.status().message());
  for (const auto& c : conds) {
    auto v = EvalCondition(c, ctx.vars);
    if (!v.ok()) return Fail("assert: " + c + ": " + v.status().message(), {{"assertion", c}});
    if (!*v) {
      json res = {{"assertion", c}, {"evaluated_to", false}};
      return Fail(Has(args, "fail_msg") ? Str(args, "fail_msg") : "Assertion failed", res);
    }
  }
  ModuleOutcome o;
  o.msg = Has(args, "success_msg") ? Str(args, "success_msg") : "All assertions passed";
  return o;
}

ModuleOutcome RunDebug(const json& args, ModuleContext& ctx) {
  ModuleOutcome o;
  if (Has(args, "msg") && Has(args, "var"))
    return Fail("debug: msg and var are mutually exclusive");
  if (Has(args, "var")) {
    std::string var = Str(args, "var");
    auto v = EvalExpression(var, ctx.vars);
    o.result[var] = v.ok() ? *v : json("VARIABLE IS NOT DEFINED!");
    return o;
  }
  json msg = Has(args, "msg") ? args["msg"] : json("Hello world!");
  o.msg = msg.is_string() ? msg.get<std::string>() : msg.dump();
  o.result["msg"] = msg;
  return o;
}

ModuleOutcome RunSetFact(const json& args, ModuleContext&) {
  json facts = json::object();
  static const std::regex kIdent("^[A-Za-z_][A-Za-z0-9_]*$");
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (it.key() == "cacheable") continue;
    if (!std::regex_match(it.key(), kIdent))
      return Fail("set_fact: '" + it.key() + "' is not a valid variable name");
    facts[it.key()] = it.value();
  }
  if (facts.empty()) return Fail("set_fact: give at least one name: value");
  ModuleOutcome o;
  o.result["ansible_facts"] = facts;
  return o;
}

ModuleOutcome RunFailModule(const json& args, ModuleContext&) {
  return Fail(Has(args, "msg") ? Str(args, "msg") : "Failed as requested from task");
}

ModuleOutcome RunPing(const json& args, ModuleContext& ctx) {
  std::string data = Str(args, "data", "pong");
  if (data == "crash") return Fail("boom");
  auto run = RunOnNode(ctx, "echo ok=1 >&3\n");
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0 || !run->meta.count("ok")) return FailedRun(*run, "ping", ctx);
  ModuleOutcome o;
  o.result["ping"] = data;
  return o;
}

// ---------------------------------------------------------------------------
// The table

using RunFn = ModuleOutcome (*)(const json&, ModuleContext&);

ArgSpec A(std::string name, bool required = false, std::vector<std::string> choices = {},
          std::vector<std::string> aliases = {}) {
  return ArgSpec{std::move(name), required, std::move(choices), std::move(aliases)};
}

// Wraps a module: aliases renamed, the rendered arguments checked again (a
// choice that came from a variable), and the outcome's flags copied into
// the registered result.
ModuleSpec Module(std::string name, std::vector<ArgSpec> args, RunFn fn, bool free_form = false,
                  bool any_args = false) {
  ModuleSpec spec;
  spec.name = std::move(name);
  spec.args = std::move(args);
  spec.free_form = free_form;
  spec.any_args = any_args;
  ModuleSpec check = spec;  // without run: what the wrapper validates against
  spec.run = [check, fn](const json& raw, ModuleContext& ctx) {
    json args = Canonical(check.args, raw.is_null() ? json::object() : raw);
    ModuleOutcome o;
    auto problems = ValidateModuleArgs(check, args);
    if (!problems.empty())
      o = Fail(check.name + ": " + Join(problems, "; "));
    else
      o = fn(args, ctx);
    if (!o.result.is_object()) o.result = json::object();
    o.result["changed"] = o.changed;
    o.result["failed"] = o.failed;
    if (!o.msg.empty() && !o.result.contains("msg")) o.result["msg"] = o.msg;
    return o;
  };
  return spec;
}

std::vector<ModuleSpec> BuildTable() {
  std::vector<ModuleSpec> t;
  const std::vector<ArgSpec> attrs = {A("mode"), A("owner"), A("group")};
  auto with_attrs = [&](std::vector<ArgSpec> a) {
    a.insert(a.end(), attrs.begin(), attrs.end());
    return a;
  };
  t.push_back(Module("command",
                     {A("_raw_params"), A("cmd"), A("argv"), A("chdir"), A("creates"), A("removes"),
                      A("stdin"), A("strip_empty_ends")},
                     RunCommandModule, true));
  t.push_back(Module("shell",
                     {A("_raw_params"), A("cmd"), A("chdir"), A("creates"), A("removes"),
                      A("stdin"), A("executable"), A("strip_empty_ends")},
                     RunShellModule, true));
  t.push_back(Module("copy",
                     with_attrs({A("dest", true), A("src"), A("content"), A("backup"), A("force")}),
                     RunCopy));
  t.push_back(Module("template",
                     with_attrs({A("src", true), A("dest", true), A("backup"), A("force")}),
                     RunTemplate));
  t.push_back(Module(
      "file",
      with_attrs({A("path", true, {}, {"dest", "name"}),
                  A("state", false, {"file", "directory", "absent", "touch", "link"}), A("src"),
                  A("recurse"), A("force"), A("modification_time"), A("access_time")}),
      RunFile));
  t.push_back(Module("lineinfile",
                     with_attrs({A("path", true, {}, {"dest", "destfile", "name"}),
                                 A("line", false, {}, {"value"}), A("regexp", false, {}, {"regex"}),
                                 A("state", false, {"present", "absent"}), A("insertafter"),
                                 A("insertbefore"), A("create"), A("backup"), A("firstmatch")}),
                     RunLineinfile));
  t.push_back(Module("user",
                     {A("name", true, {}, {"user"}), A("state", false, {"present", "absent"}),
                      A("uid"), A("group"), A("groups"), A("append"), A("shell"), A("home"),
                      A("comment"), A("create_home", false, {}, {"createhome"}), A("system"),
                      A("password"), A("password_lock"), A("remove")},
                     RunUser));
  t.push_back(Module(
      "group", {A("name", true), A("state", false, {"present", "absent"}), A("gid"), A("system")},
      RunGroup));
  t.push_back(Module(
      "apt",
      {A("name", false, {}, {"pkg", "package"}), A("state", false, {"present", "absent", "latest"}),
       A("update_cache", false, {}, {"update-cache"}), A("cache_valid_time"),
       A("install_recommends", false, {}, {"install-recommends"}), A("deb"), A("purge"),
       A("autoremove")},
      RunApt));
  t.push_back(Module("apt_repository",
                     {A("repo", true), A("state", false, {"present", "absent"}), A("filename"),
                      A("update_cache", false, {}, {"update-cache"}), A("codename"), A("mode"),
                      // Not in Ansible: a keyring file on the node, written as
                      // [signed-by=...]. Keys cannot be fetched from a keyserver
                      // offline; the key file must be put there first (copy).
                      A("signed_by")},
                     RunAptRepository));
  t.push_back(Module("get_url",
                     with_attrs({A("url", true), A("dest", true), A("checksum"), A("force"),
                                 A("timeout"), A("validate_certs")}),
                     RunGetUrl));
  t.push_back(Module("systemd",
                     {A("name", false, {}, {"service", "unit"}),
                      A("state", false, {"started", "stopped", "restarted", "reloaded"}),
                      A("enabled"), A("daemon_reload", false, {}, {"daemon-reload"}), A("masked")},
                     RunSystemd));
  t.push_back(
      Module("service",
             {A("name", true), A("state", false, {"started", "stopped", "restarted", "reloaded"}),
              A("enabled")},
             RunServiceModule));
  t.push_back(Module("wait_for",
                     {A("port"), A("host"), A("path"),
                      A("state", false, {"started", "stopped", "present", "absent"}), A("timeout"),
                      A("delay"), A("sleep"), A("search_regex"), A("connect_timeout"), A("msg")},
                     RunWaitFor));
  t.push_back(Module("reboot",
                     {A("reboot_timeout"), A("msg"), A("test_command"), A("pre_reboot_delay"),
                      A("post_reboot_delay"), A("connect_timeout")},
                     RunReboot));
  t.push_back(Module(
      "stat",
      {A("path", true, {}, {"dest", "name"}),
       A("checksum_algorithm", false, {"md5", "sha1", "sha224", "sha256", "sha384", "sha512"},
         {"checksum", "checksum_algo"}),
       A("get_checksum"), A("follow")},
      RunStat));
  t.push_back(Module(
      "assert", {A("that", true), A("fail_msg", false, {}, {"msg"}), A("success_msg"), A("quiet")},
      RunAssert));
  t.push_back(Module("debug", {A("msg"), A("var"), A("verbosity")}, RunDebug));
  t.push_back(Module("set_fact", {A("cacheable")}, RunSetFact, false, true));
  t.push_back(Module("fail", {A("msg")}, RunFailModule));
  t.push_back(Module("ping", {A("data")}, RunPing));
  return t;
}

bool IsTemplated(const json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s.find("{{") != std::string::npos || s.find("{%") != std::string::npos;
}

}  // namespace

const std::vector<ModuleSpec>& AllModules() {
  static const std::vector<ModuleSpec> table = BuildTable();
  return table;
}

const ModuleSpec* FindModule(const std::string& name) {
  std::string shortname = name;
  for (const char* prefix : {"ansible.builtin.", "ansible.posix.", "ansible.legacy."}) {
    if (shortname.rfind(prefix, 0) == 0) {
      shortname = shortname.substr(std::string(prefix).size());
      break;
    }
  }
  for (const auto& m : AllModules())
    if (m.name == shortname) return &m;
  return nullptr;
}

std::vector<std::string> ValidateModuleArgs(const ModuleSpec& spec, const nlohmann::json& args) {
  std::vector<std::string> problems;
  if (!args.is_null() && !args.is_object()) {
    problems.push_back("the arguments of " + spec.name + " must be a mapping");
    return problems;
  }
  auto given = [&](const ArgSpec& a) -> std::vector<std::string> {
    std::vector<std::string> names;
    if (args.is_object()) {
      if (args.contains(a.name)) names.push_back(a.name);
      for (const auto& al : a.aliases)
        if (args.contains(al)) names.push_back(al);
    }
    return names;
  };
  if (args.is_object()) {
    for (auto it = args.begin(); it != args.end(); ++it) {
      bool known = spec.any_args;
      for (const auto& a : spec.args)
        if (a.name == it.key() ||
            std::find(a.aliases.begin(), a.aliases.end(), it.key()) != a.aliases.end())
          known = true;
      if (!known) {
        std::vector<std::string> names;
        for (const auto& a : spec.args)
          if (a.name != "_raw_params") names.push_back(a.name);
        problems.push_back("unknown argument '" + it.key() + "' for module " + spec.name +
                           (names.empty() ? "" : " (it takes: " + Join(names, ", ") + ")"));
      }
    }
  }
  for (const auto& a : spec.args) {
    auto names = given(a);
    if (a.required && names.empty())
      problems.push_back("missing required argument '" + a.name + "' for module " + spec.name);
    if (names.size() > 1)
      problems.push_back("argument '" + a.name + "' of module " + spec.name + " given twice (as " +
                         Join(names, " and ") + ")");
    if (!names.empty() && !a.choices.empty()) {
      const json& v = args.at(names[0]);
      if (!IsTemplated(v)) {
        std::string text = v.is_string() ? v.get<std::string>() : v.dump();
        if (std::find(a.choices.begin(), a.choices.end(), text) == a.choices.end())
          problems.push_back("argument '" + names[0] + "' of module " + spec.name + " is '" + text +
                             "', expected one of: " + Join(a.choices, ", "));
      }
    }
  }
  // Combinations the table cannot say.
  auto has = [&](const char* k) {
    for (const auto& a : spec.args)
      if (a.name == k) return !given(a).empty();
    return false;
  };
  if ((spec.name == "command" || spec.name == "shell") && !has("_raw_params") && !has("cmd") &&
      !has("argv"))
    problems.push_back(spec.name + " needs a command (free form, cmd" +
                       (spec.name == "command" ? " or argv)" : ")"));
  if (spec.name == "copy" && has("src") == has("content"))
    problems.push_back("copy needs exactly one of src and content");
  if (spec.name == "debug" && has("msg") && has("var"))
    problems.push_back("debug takes msg or var, not both");
  if (spec.name == "wait_for" && has("port") && has("path"))
    problems.push_back("wait_for takes port or path, not both");
  if (spec.name == "lineinfile" && has("insertafter") && has("insertbefore"))
    problems.push_back("lineinfile takes insertafter or insertbefore, not both");
  return problems;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

}  // namespace prov
