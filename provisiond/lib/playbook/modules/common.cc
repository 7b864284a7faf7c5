// What every module family uses. A module that touches a node sends it one
// POSIX sh script (rarely two) that checks and changes in place, so a task
// costs one round trip (RunOnNode). Scripts report through file descriptor 3
// with "key=value" lines: changed=1 whenever they changed something, msg=...
// with exit 1 when they fail on purpose, and module-specific values
// (checksum=..., uid=...). Arguments are read as Ansible reads them.
#include "playbook/modules/common.h"
#include "playbook/jinja/regex.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace prov::modules {
namespace {

// The shell functions every script starts with.
constexpr const char* kPrelude = R"SH(
changed() { echo changed=1 >&3; }
fail() { printf 'msg=%s\n' "$(printf '%s' "$*" | tr '\n' ' ')" >&3; exit 1; }
# attrs PATH MODE OWNER GROUP [-h]: fixes what differs, reports a change.
# One stat for all three; a numeric MODE the file already has is left alone
# (chmod and a second stat only when it differs, or is symbolic, or PATH is a
# link). Each program started is milliseconds on a node, far more on a slow one.
attrs() {
  [ -n "$2$3$4" ] || return 0
  _r=$(stat -c '%a %U %u %G %g' -- "$1") || fail "cannot stat $1"
  _a=${_r%% *}; _r=${_r#* }; _U=${_r%% *}; _r=${_r#* }; _u=${_r%% *}; _r=${_r#* }
  _G=${_r%% *}; _g=${_r#* }
  if [ -n "$2" ]; then
    _w=
    case $2 in *[!0-7]*) ;; *) _w=${2#"${2%%[!0]*}"}; _w=${_w:-0} ;; esac
    if [ "$_w" != "$_a" ] || [ -L "$1" ]; then
      _e=$(chmod -- "$2" "$1" 2>&1) || fail "chmod $2 $1: $_e"
      [ "$(stat -c %a -- "$1")" = "$_a" ] || changed
    fi
  fi
  if [ -n "$3" ]; then
    case " $_U $_u " in
      *" $3 "*) ;;
      *) _e=$(chown $5 -- "$3" "$1" 2>&1) || fail "chown $3 $1: $_e"; changed ;;
    esac
  fi
  if [ -n "$4" ]; then
    case " $_G $_g " in
      *" $4 "*) ;;
      *) _e=$(chgrp $5 -- "$4" "$1" 2>&1) || fail "chgrp $4 $1: $_e"; changed ;;
    esac
  fi
}
)SH";

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

}  // namespace

bool Has(const json& args, const std::string& key) {
  return args.is_object() && args.contains(key) && !args.at(key).is_null();
}

std::string Str(const json& args, const std::string& key, const std::string& def) {
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
    static const jinja::Regex kInt = jinja::FixedRegex("\\s*-?[0-9]+\\s*");
    if (jinja::Matches(kInt, s)) return std::stoll(s);
  }
  return Status::Invalid(key + ": '" + Str(args, key) + "' is not a whole number");
}

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

Result<std::string> ModeArg(const json& args, const std::string& key) {
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
  static const jinja::Regex kOctal = jinja::FixedRegex("0?[0-7]{3,4}");
  static const jinja::Regex kSymbolic =
      jinja::FixedRegex("([ugoa]*[-+=]([rwxXst]*|[ugo]))+(,([ugoa]*[-+=]([rwxXst]*|[ugo]))+)*");
  if (jinja::Matches(kOctal, s) || jinja::Matches(kSymbolic, s)) return s;
  return Status::Invalid(
      key + ": '" + s + "' is not a mode: use octal in quotes ('0644') or symbolic (u=rw,g=r,o=r)");
}

std::string Basename(const std::string& p) {
  size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

ModuleOutcome Fail(const std::string& msg, json result) {
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

Result<NodeRun> RunOnNode(ModuleContext& ctx, const std::string& body, const std::string& input,
                          int timeout_ms) {
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

ModuleOutcome FailedRun(const NodeRun& run, const std::string& what, ModuleContext& ctx) {
  json res;
  res["rc"] = run.r.exit_code;
  res["stdout"] = run.r.out;
  res["stderr"] = run.r.err;
  return Fail(FailureMessage(run, what, ctx), res);
}

ArgSpec A(std::string name, bool required, std::vector<std::string> choices,
          std::vector<std::string> aliases) {
  return ArgSpec{std::move(name), required, std::move(choices), std::move(aliases)};
}

std::vector<ArgSpec> WithAttrs(std::vector<ArgSpec> args) {
  const std::vector<ArgSpec> attrs = {A("mode"), A("owner"), A("group")};
  args.insert(args.end(), attrs.begin(), attrs.end());
  return args;
}

}  // namespace prov::modules
