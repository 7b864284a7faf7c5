// What runs on the node: systemd units and SysV services, waiting for a
// port or a file to appear (a service coming up), the node's name, and
// rebooting. At image stage some of it is left to the node's boot or
// refused (see AtImageStage).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "playbook/jinja/regex.h"
#include "playbook/modules/common.h"

namespace prov::modules {
namespace {

// Image stage: the runner's variable provisiond_stage is "image" (absent or
// "node": a booted node). The playbook then runs once, on the control node,
// inside an image's root tree (ChrootRemote), so what needs the image's
// system running is not there: no daemon of the image may start on the
// control node, and there is no booted node to reboot or to reach on a
// port. The modules of this file are the ones it concerns; the rules live
// here, beside what they change:
// - systemd/service apply enabled and masked (systemctl works on unit
//   files in a chroot) but never a state, nor daemon_reload (no systemd runs
//   the image's units): a task (or a handler) with nothing else is skipped,
//   saying why; the units start when the node boots.
// - reboot, and wait_for of a port, fail, naming the module and the fix.
// - hostname writes the tree's /etc/hostname; ChrootRemote keeps the
//   kernel's name it sets in a namespace of its own.
bool AtImageStage(const ModuleContext& ctx) {
  if (!ctx.vars.is_object()) return false;
  auto it = ctx.vars.find("provisiond_stage");
  return it != ctx.vars.end() && it->is_string() && it->get_ref<const std::string&>() == "image";
}

ModuleOutcome NeedsBootedNode(const std::string& what, const std::string& why) {
  return Fail(what + " cannot run at image stage: " + why +
              " (add \"when: provisiond_stage != 'image'\" to the task, or run it from the "
              "node-stage playbooks)");
}

// The systemd part: `n` is the unit; state/enabled/masked/reload as given.
constexpr const char* kSystemdScript = R"SH(
command -v systemctl >/dev/null 2>&1 || fail "systemctl not found on the node: it does not run systemd"
# systemctl enable and disable reload systemd themselves: when one of them
# will run, it is the reload asked for (one reload, not two: seconds each on
# a slow node).
if [ "$daemon_reload" = 1 ] && [ -n "$n" ] && [ -n "$enabled" ] && [ -z "$masked" ]; then
  if systemctl is-enabled --quiet -- "$n" 2>/dev/null; then ise=1; else ise=0; fi
  [ "$enabled" = "$ise" ] || daemon_reload=by-enable
fi
if [ "$daemon_reload" = 1 ]; then _e=$(systemctl daemon-reload 2>&1) || fail "systemctl daemon-reload: $_e"; fi
[ -n "$n" ] || exit 0
# One `systemctl show` for the unit's states (each systemctl started costs
# on a slow node), asked again only after something was done.
show_unit() {
  load= act= sub= ufs=
  _s=$(systemctl show -p LoadState -p ActiveState -p SubState -p UnitFileState -- "$n" 2>/dev/null)
  while IFS='=' read -r _k _v; do
    case $_k in LoadState) load=$_v ;; ActiveState) act=$_v ;; SubState) sub=$_v ;; UnitFileState) ufs=$_v ;; esac
  done <<EOF
$_s
EOF
}
show_unit
if [ "$load" = not-found ] && [ "$masked" != 0 ]; then fail "Could not find the requested service $n: host"; fi
# is-enabled reads the unit files themselves (show's UnitFileState is what
# systemd last loaded): its exit status says enabled, its word says masked.
did=0
if [ -n "$masked$enabled" ]; then
  if cur=$(systemctl is-enabled -- "$n" 2>/dev/null); then ise=1; else ise=0; fi
fi
if [ -n "$masked" ]; then
  case "$cur" in masked*) ism=1 ;; *) ism=0 ;; esac
  if [ "$masked" = 1 ] && [ "$ism" = 0 ]; then _e=$(systemctl mask -- "$n" 2>&1) || fail "systemctl mask $n: $_e"; changed; did=1; fi
  if [ "$masked" = 0 ] && [ "$ism" = 1 ]; then _e=$(systemctl unmask -- "$n" 2>&1) || fail "systemctl unmask $n: $_e"; changed; did=1; fi
  if [ "$did" = 1 ] && [ -n "$enabled" ]; then
    if systemctl is-enabled --quiet -- "$n" 2>/dev/null; then ise=1; else ise=0; fi
  fi
fi
if [ -n "$enabled" ]; then
  if [ "$enabled" = 1 ] && [ "$ise" = 0 ]; then _e=$(systemctl enable -- "$n" 2>&1) || fail "systemctl enable $n: $_e"; changed; did=1; fi
  if [ "$enabled" = 0 ] && [ "$ise" = 1 ]; then _e=$(systemctl disable -- "$n" 2>&1) || fail "systemctl disable $n: $_e"; changed; did=1; fi
fi
[ "$did" = 0 ] || show_unit
case "$act" in active|activating|reloading) running=1 ;; *) running=0 ;; esac
did=1
case "$state" in
  started) if [ "$running" = 0 ]; then _e=$(systemctl start -- "$n" 2>&1) || fail "Unable to start service $n: $_e"; changed; else did=0; fi ;;
  stopped) if [ "$running" = 1 ]; then _e=$(systemctl stop -- "$n" 2>&1) || fail "Unable to stop service $n: $_e"; changed; else did=0; fi ;;
  restarted) _e=$(systemctl restart -- "$n" 2>&1) || fail "Unable to restart service $n: $_e"; changed ;;
  reloaded)
    if [ "$running" = 0 ]; then _e=$(systemctl start -- "$n" 2>&1) || fail "Unable to start service $n: $_e"
    else _e=$(systemctl reload -- "$n" 2>&1) || fail "Unable to reload service $n: $_e"; fi
    changed ;;
  *) did=0 ;;
esac
[ "$did" = 0 ] || show_unit
[ -z "$act$sub$ufs$load" ] || printf 'status.ActiveState=%s\nstatus.SubState=%s\nstatus.UnitFileState=%s\nstatus.LoadState=%s\n' "$act" "$sub" "$ufs" "$load" >&3
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
  std::string state = Str(args, "state");
  if (state.empty() && enabled.empty() && masked.empty() && reload != "1")
    return Fail("one of state, enabled, masked or daemon_reload is required");
  if (name.empty() && (!state.empty() || !enabled.empty() || !masked.empty()))
    return Fail("name is required with state, enabled or masked");
  const bool image = AtImageStage(ctx);
  // At image stage, what was left alone and why; a task left with nothing
  // else to do is skipped.
  std::vector<std::string> not_applied;
  if (image && !state.empty()) {
    not_applied.push_back("state: " + state +
                          " not applied at image stage (no daemon of the image runs on the "
                          "control node; " +
                          (state == "stopped"
                               ? "a disabled unit does not start when the node boots)"
                               : "an enabled unit starts when the node boots)"));
    state.clear();
  }
  if (image && reload == "1") {
    // No systemd runs the image's units (systemctl daemon-reload in a chroot
    // is ignored, or fails where the control node's PID 1 is not systemd).
    not_applied.push_back(
        "daemon_reload not needed at image stage (the node's systemd reads the unit files when "
        "it boots)");
    reload.clear();
  }
  if (image && enabled.empty() && masked.empty()) {
    ModuleOutcome o;
    o.msg = Join(not_applied, "; ");
    o.result["skipped"] = true;
    o.result["skip_reason"] = o.msg;
    o.result["name"] = name;
    return o;
  }
  std::string s = "n=" + Q(name) + "; state=" + Q(state) + "; enabled=" + enabled +
                  "; masked=" + masked + "; daemon_reload=" + reload + "\n";
  if (systemd_module) {
    s += kSystemdScript;
  } else {
    // In an image's tree no systemd runs (its /run is empty): a tree that
    // has systemctl is a systemd image, whose unit files systemctl edits.
    s += image ? "if command -v systemctl >/dev/null 2>&1; then\n"
               : "if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then\n";
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
  o.msg = Join(not_applied, "; ");
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

ModuleOutcome RunWaitFor(const json& args, ModuleContext& ctx) {
  auto timeout = Int(args, "timeout", 300);
  auto delay = Int(args, "delay", 0);
  auto connect = Int(args, "connect_timeout", 5);
  auto port = Int(args, "port", 0);
  for (auto* v : {&timeout, &delay, &connect, &port})
    if (!v->ok()) return Fail("wait_for: " + v->status().message());
  std::string sleep = Str(args, "sleep", "1");
  static const jinja::Regex kNum = jinja::FixedRegex("[0-9]+(\\.[0-9]+)?");
  if (!jinja::Matches(kNum, sleep))
    return Fail("wait_for: sleep: '" + sleep + "' is not a number of seconds");
  const std::string path = Str(args, "path"), host = Str(args, "host", "127.0.0.1");
  std::string state = Str(args, "state", "started");
  if (Has(args, "port") && !path.empty())
    return Fail("wait_for: port and path are mutually exclusive");
  if (Has(args, "port") && (*port < 1 || *port > 65535))
    return Fail("wait_for: port must be 1..65535");
  if (Has(args, "search_regex") && path.empty())
    return Fail("wait_for: search_regex is supported with path only");
  if (Has(args, "port") && AtImageStage(ctx))
    return NeedsBootedNode("wait_for of port " + std::to_string(*port),
                           "no daemon of the image runs on the control node, so no port opens "
                           "before the node boots");
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
  if (AtImageStage(ctx))
    return NeedsBootedNode("reboot",
                           "the playbook runs in the image's tree on the control node; "
                           "there is no booted node to reboot");
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

// hostname: the node's name, in the kernel and in /etc/hostname (through
// hostnamectl where systemd runs). /etc/hostname is written in place, as
// hostnamectl does: it may be a bind mount that a rename cannot replace.
constexpr const char* kHostnameScript = R"SH(
cur=$(cat /proc/sys/kernel/hostname 2>/dev/null)
file=$(cat /etc/hostname 2>/dev/null)
echo before="$cur" >&3
[ "$cur" = "$want" ] && [ "$file" = "$want" ] && exit 0
if [ -d /run/systemd/system ] && command -v hostnamectl >/dev/null 2>&1; then
  _e=$(hostnamectl set-hostname -- "$want" 2>&1) || fail "hostnamectl set-hostname $want: $_e"
else
  if [ "$file" != "$want" ]; then printf '%s\n' "$want" >/etc/hostname || fail "cannot write /etc/hostname"; fi
  if [ "$cur" != "$want" ]; then _e=$(hostname -- "$want" 2>&1) || fail "hostname $want: $_e"; fi
fi
changed
)SH";

ModuleOutcome RunHostname(const json& args, ModuleContext& ctx) {
  const std::string want = Str(args, "name");
  const std::string use = Str(args, "use", "");
  if (!use.empty() && use != "systemd" && use != "debian" && use != "generic")
    return Fail("hostname: use '" + use +
                "': the native runner sets names the systemd or "
                "Debian way");
  // RFC 1123 labels; the kernel keeps at most 64 bytes.
  static const jinja::Regex kName = jinja::FixedRegex(
      "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)"
      "*");
  if (want.size() > 64 || !jinja::Matches(kName, want))
    return Fail("hostname: '" + want +
                "' is not a host name (letters, digits, '-' and '.' "
                "between labels, at most 64 characters)");
  auto run = RunOnNode(ctx, "want=" + Q(want) + "\n" + kHostnameScript);
  if (!run.ok()) return Unreachable(run.status());
  if (run->r.exit_code != 0) return FailedRun(*run, "hostname", ctx);
  ModuleOutcome o;
  o.changed = run->changed;
  const std::string short_name = want.substr(0, want.find('.'));
  const size_t dot = want.find('.');
  o.result["name"] = want;
  o.result["ansible_facts"] = {
      {"ansible_hostname", short_name},
      {"ansible_nodename", want},
      {"ansible_fqdn", want},
      {"ansible_domain", dot == std::string::npos ? "" : want.substr(dot + 1)}};
  return o;
}

}  // namespace

std::vector<ModuleSpec> ServiceModules() {
  std::vector<ModuleSpec> t;
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
                     RunWaitFor, false, false,
                     {.combinations = {{ModuleRules::Combination::Kind::kAtMostOne,
                                        {"port", "path"},
                                        "wait_for takes port or path, not both"}}}));
  t.push_back(Module("hostname", {A("name", true), A("use")}, RunHostname));
  t.push_back(Module("reboot",
                     {A("reboot_timeout"), A("msg"), A("test_command"), A("pre_reboot_delay"),
                      A("post_reboot_delay"), A("connect_timeout")},
                     RunReboot));
  return t;
}

}  // namespace prov::modules
