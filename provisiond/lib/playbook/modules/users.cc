// user and group: local accounts through useradd/usermod/userdel and
// groupadd/groupmod/groupdel, changing only what differs from getent's view.
#include <string>

#include "playbook/jinja/regex.h"
#include "playbook/modules/common.h"

namespace prov::modules {
namespace {

ModuleOutcome RunUser(const json& args, ModuleContext& ctx) {
  const std::string name = Str(args, "name");
  static const jinja::Regex kName =
      jinja::FixedRegex("[a-z_][a-z0-9_.-]*\\$?", {.ignorecase = true});
  if (!jinja::Matches(kName, name)) return Fail("user: '" + name + "' is not a valid user name");
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
  static const jinja::Regex kName =
      jinja::FixedRegex("[a-z_][a-z0-9_.-]*\\$?", {.ignorecase = true});
  if (!jinja::Matches(kName, name)) return Fail("group: '" + name + "' is not a valid group name");
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

}  // namespace

std::vector<ModuleSpec> UserModules() {
  std::vector<ModuleSpec> t;
  t.push_back(Module("user",
                     {A("name", true, {}, {"user"}), A("state", false, {"present", "absent"}),
                      A("uid"), A("group"), A("groups"), A("append"), A("shell"), A("home"),
                      A("comment"), A("create_home", false, {}, {"createhome"}), A("system"),
                      A("password"), A("password_lock"), A("remove")},
                     RunUser));
  t.push_back(Module(
      "group", {A("name", true), A("state", false, {"present", "absent"}), A("gid"), A("system")},
      RunGroup));
  return t;
}

}  // namespace prov::modules
