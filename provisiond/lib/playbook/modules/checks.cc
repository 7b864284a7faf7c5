// The modules that change nothing on the node: they look at it (stat, ping),
// decide (assert, fail), show (debug) or remember (set_fact, and setup,
// which hands back the facts the node reported when it phoned home).
#include <fnmatch.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "playbook/jinja/jinja.h"
#include "playbook/jinja/regex.h"
#include "playbook/modules/common.h"

namespace prov::modules {
namespace {

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
  static const jinja::Regex kIdent = jinja::FixedRegex("[A-Za-z_][A-Za-z0-9_]*");
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (it.key() == "cacheable") continue;
    if (!jinja::Matches(kIdent, it.key()))
      return Fail("set_fact: '" + it.key() + "' is not a valid variable name");
    facts[it.key()] = it.value();
  }
  if (facts.empty()) return Fail("set_fact: give at least one name: value");
  ModuleOutcome o;
  o.result["ansible_facts"] = facts;
  return o;
}

// setup: the facts Ansible would gather, from what the node reported when it
// phoned home (the runner's vars hold them as ansible_facts); nothing runs on
// the node. `filter` keeps the facts whose names match its globs.
ModuleOutcome RunSetup(const json& args, ModuleContext& ctx) {
  json facts = ctx.vars.contains("ansible_facts") && ctx.vars["ansible_facts"].is_object()
                   ? ctx.vars["ansible_facts"]
                   : json::object();
  std::vector<std::string> filters = List(args, "filter");
  if (!filters.empty()) {
    json kept = json::object();
    for (const auto& [name, value] : facts.items())
      for (const auto& f : filters) {
        std::string glob = f.rfind("ansible_", 0) == 0 ? f.substr(8) : f;
        if (fnmatch(glob.c_str(), name.c_str(), 0) == 0) kept[name] = value;
      }
    facts = std::move(kept);
  }
  ModuleOutcome o;
  json prefixed = json::object();
  for (const auto& [name, value] : facts.items()) prefixed["ansible_" + name] = value;
  o.result["ansible_facts"] = prefixed;
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

}  // namespace

std::vector<ModuleSpec> CheckModules() {
  std::vector<ModuleSpec> t;
  t.push_back(Module(
      "stat",
      {A("path", true, {}, {"dest", "name"}),
       A("checksum_algorithm", false, {"md5", "sha1", "sha224", "sha256", "sha384", "sha512"},
         {"checksum", "checksum_algo"}),
       A("get_checksum"), A("follow")},
      RunStat));
  t.push_back(Module(
      "assert", {A("that", true), A("fail_msg", false, {}, {"msg"}), A("success_msg"), A("quiet")},
      RunAssert, false, false, {.raw_args = true, .condition_args = {"that"}}));
  t.push_back(Module("debug", {A("msg"), A("var"), A("verbosity")}, RunDebug, false, false,
                     {.combinations = {{ModuleRules::Combination::Kind::kAtMostOne,
                                        {"msg", "var"},
                                        "debug takes msg or var, not both"}},
                      .expression_args = {"var"}}));
  t.push_back(Module("set_fact", {A("cacheable")}, RunSetFact, false, true));
  t.push_back(Module("fail", {A("msg")}, RunFailModule));
  t.push_back(Module(
      "setup", {A("filter"), A("gather_subset"), A("gather_timeout"), A("fact_path")}, RunSetup));
  t.push_back(Module("ping", {A("data")}, RunPing));
  return t;
}

}  // namespace prov::modules
