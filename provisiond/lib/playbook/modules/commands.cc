// command and shell: the node runs what the task says, the way Ansible's
// modules do (command without a shell, its words split as shlex.split does;
// shell through /bin/sh), with creates/removes deciding whether it runs.
#include <string>
#include <vector>

#include "playbook/modules/common.h"

namespace prov::modules {
namespace {

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

}  // namespace

std::vector<ModuleSpec> CommandModules() {
  std::vector<ModuleSpec> t;
  t.push_back(Module("command",
                     {A("_raw_params"), A("cmd"), A("argv"), A("chdir"), A("creates"), A("removes"),
                      A("stdin"), A("strip_empty_ends")},
                     RunCommandModule, true, false,
                     {.combinations = {{ModuleRules::Combination::Kind::kAtLeastOne,
                                        {"_raw_params", "cmd", "argv"},
                                        "command needs a command (free form, cmd or argv)"}}}));
  t.push_back(Module("shell",
                     {A("_raw_params"), A("cmd"), A("chdir"), A("creates"), A("removes"),
                      A("stdin"), A("executable"), A("strip_empty_ends")},
                     RunShellModule, true, false,
                     {.combinations = {{ModuleRules::Combination::Kind::kAtLeastOne,
                                        {"_raw_params", "cmd"},
                                        "shell needs a command (free form, cmd)"}}}));
  return t;
}

}  // namespace prov::modules
