// Modules that write files on the node: copy, template, file, lineinfile.
// Content goes with the first script when small, otherwise only once the
// node's checksum differs; it is written beside its destination and renamed
// into place.

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "playbook/jinja/jinja.h"
#include "playbook/jinja/regex.h"
#include "playbook/modules/common.h"

namespace prov::modules {
namespace {

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
         "; backup=" + (req.backup ? "1" : "0") + "; tmpname=.provisiond." + RandomHex(8) + "\n";
    s += R"SH(
if [ -d "$dest" ]; then
  [ -n "$base" ] || fail "dest $dest is a directory: give a file path"
  dest="${dest%/}/$base"
fi
# dirname's answer without starting it ("a" -> ".", "/a" -> "/", "a//b/" -> "a").
_d=$dest
while [ "${_d%/}" != "$_d" ] && [ -n "${_d%/}" ]; do _d=${_d%/}; done
case $_d in
  */*) dir=${_d%/*}; while [ "${dir%/}" != "$dir" ]; do dir=${dir%/}; done; dir=${dir:-/} ;;
  *) dir=. ;;
esac
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
  # A new file beside dest under a name nobody on the node can guess (random,
  # from provisiond), made with O_EXCL by the shell (set -C) with the mode
  # umask gives; mktemp (mode 0600) if that name exists.
  tmp="$dir/$tmpname"; fresh=0
  set -C
  if true 2>/dev/null >"$tmp"; then
    set +C; fresh=1
  else
    set +C; tmp=$(mktemp -- "$dir/.provisiond.XXXXXXXX" 2>/dev/null) || fail "cannot create a file in $dir"
  fi
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
  elif [ "$fresh" = 0 ]; then
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

// re.search on a line as Ansible reads it (with its "\n"; "$" matches
// before it). The pattern comes from the playbook and the line from the node:
// a search that hits the engine's limits is the task's error
// (playbook/jinja/regex.h).
Result<bool> LineSearch(const std::string& line, const jinja::Regex& re) {
  auto m = re.Search(line);
  if (!m.ok()) return m.status();
  return m->has_value();
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

  auto compile = [](const std::string& what, const std::string& re) -> Result<jinja::Regex> {
    auto r = jinja::Regex::Compile(re);
    if (!r.ok()) return Status::Invalid(what + ": " + r.status().message());
    return r;
  };
  std::optional<jinja::Regex> re_m, re_ins;
  if (has_re) {
    auto r = compile("regexp", Str(args, "regexp"));
    if (!r.ok()) return Fail("lineinfile: " + r.status().message());
    re_m = std::move(*r);
  }
  std::string insertafter = Str(args, "insertafter"), insertbefore = Str(args, "insertbefore");
  for (const std::string* ins : {&insertafter, &insertbefore}) {
    if (!ins->empty() && *ins != "EOF" && *ins != "BOF") {
      auto r = compile(ins == &insertafter ? "insertafter" : "insertbefore", *ins);
      if (!r.ok()) return Fail("lineinfile: " + r.status().message());
      re_ins = std::move(*r);
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
      for (size_t i = 0; i < lines.size(); ++i) {
        auto found = LineSearch(lines[i], *re_m);
        if (!found.ok()) return Fail("lineinfile: regexp: " + found.status().message());
        if (*found) {
          index0 = static_cast<int>(i);
          matched = true;
          if (*firstmatch) break;
        }
      }
    }
    if (!matched) {
      for (size_t i = 0; i < lines.size(); ++i) {
        if (RStripNl(lines[i]) == line) {
          index0 = static_cast<int>(i);  // the exact line: nothing to add
          continue;
        }
        if (!re_ins) continue;
        auto found = LineSearch(lines[i], *re_ins);
        if (!found.ok())
          return Fail(
              "lineinfile: " + std::string(insertafter.empty() ? "insertbefore" : "insertafter") +
              ": " + found.status().message());
        if (*found) {
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
      bool m = RStripNl(l) == line;
      if (re_m) {
        auto found = LineSearch(l, *re_m);
        if (!found.ok()) return Fail("lineinfile: regexp: " + found.status().message());
        m = *found;
      }
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

}  // namespace

std::vector<ModuleSpec> FileModules() {
  std::vector<ModuleSpec> t;
  t.push_back(Module("copy",
                     WithAttrs({A("dest", true), A("src"), A("content"), A("backup"), A("force")}),
                     RunCopy, false, false,
                     {.combinations = {{ModuleRules::Combination::Kind::kExactlyOne,
                                        {"src", "content"},
                                        "copy needs exactly one of src and content"}},
                      .local_dir = "files"}));
  t.push_back(
      Module("template", WithAttrs({A("src", true), A("dest", true), A("backup"), A("force")}),
             RunTemplate, false, false, {.local_dir = "templates", .local_is_template = true}));
  t.push_back(Module(
      "file",
      WithAttrs({A("path", true, {}, {"dest", "name"}),
                 A("state", false, {"file", "directory", "absent", "touch", "link"}), A("src"),
                 A("recurse"), A("force"), A("modification_time"), A("access_time")}),
      RunFile));
  t.push_back(Module(
      "lineinfile",
      WithAttrs({A("path", true, {}, {"dest", "destfile", "name"}), A("line", false, {}, {"value"}),
                 A("regexp", false, {}, {"regex"}), A("state", false, {"present", "absent"}),
                 A("insertafter"), A("insertbefore"), A("create"), A("backup"), A("firstmatch")}),
      RunLineinfile, false, false,
      {.combinations = {{ModuleRules::Combination::Kind::kAtMostOne,
                         {"insertafter", "insertbefore"},
                         "lineinfile takes insertafter or insertbefore, not both"}}}));
  return t;
}

}  // namespace prov::modules
