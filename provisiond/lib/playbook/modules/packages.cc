// What a node installs from the network: Debian packages (apt), their
// sources (apt_repository) and single files fetched by URL (get_url), with
// long timeouts since mirrors can be slow.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "playbook/jinja/regex.h"
#include "playbook/modules/common.h"

namespace prov::modules {
namespace {

constexpr const char* kAptGet =
    "apt-get -q -y -o DPkg::Lock::Timeout=120 -o Dpkg::Options::=--force-confdef "
    "-o Dpkg::Options::=--force-confold";

ModuleOutcome RunApt(const json& args, ModuleContext& ctx) {
  const std::string state = Str(args, "state", "present");
  std::vector<std::string> names = List(args, "name");
  static const jinja::Regex kPkg =
      jinja::FixedRegex("[a-z0-9][a-z0-9+.\\-]*(:[a-z0-9]+)?(=[A-Za-z0-9.+~:*\\-]+)?");
  for (const auto& n : names)
    if (!jinja::Matches(kPkg, n))
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
  std::string pkgs;
  for (const auto& n : names) pkgs += " " + Q(n);
  if (*update) {
    // Every package there already (state present): nothing needs a fresh
    // list, so the mirror is not asked. A node whose image baked the
    // packages reaches `ready` without a mirror (Ansible would update).
    s += "fresh=1\n";
    if (state == "present" && !names.empty() && deb.empty())
      s += "fresh=0; set --" + pkgs + "; for p; do has \"$p\" || fresh=1; done\n";
    s += R"SH(
before=$(cache_time)
if [ "$fresh" = 0 ]; then
  :
elif [ "$valid" -le 0 ] || [ $(( $(date +%s) - before )) -ge "$valid" ]; then
  _o=$(apt-get -q update 2>&1) || fail "Failed to update apt cache: $(printf '%s' "$_o" | tail -n 5)"
  [ -e /var/lib/apt/periodic/update-success-stamp ] && stamp=/var/lib/apt/periodic/update-success-stamp
  [ "$(cache_time)" != "$before" ] && echo cache_updated=1 >&3
fi
echo "cache_update_time=$(cache_time)" >&3
)SH";
  }
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
  static const jinja::Regex kOptions = jinja::FixedRegex("\\[[^\\]]+\\]");
  static const jinja::Regex kScheme = jinja::FixedRegex("\\w+://");
  auto no_options = kOptions.Replace(line, "");
  std::string l = no_options.ok() ? *no_options : line;
  auto no_scheme = kScheme.Replace(l, "");
  if (no_scheme.ok()) l = *no_scheme;
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
    static const jinja::Regex kPpa =
        jinja::FixedRegex("ppa:([A-Za-z0-9._+-]+)(/([A-Za-z0-9._+-]+))?");
    auto m = kPpa.FullMatch(repo);
    if (!m.ok() || !*m) return Fail("apt_repository: '" + repo + "' is not ppa:owner/name");
    std::string owner = *(*m)->Group(repo, 1), name = (*m)->Group(repo, 3).value_or("ppa");
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

ModuleOutcome RunGetUrl(const json& args, ModuleContext& ctx) {
  const std::string url = Str(args, "url"), dest = Str(args, "dest");
  static const jinja::Regex kUrl = jinja::FixedRegex("(https?|ftp|file)://[^\\s]+");
  if (!jinja::Matches(kUrl, url))
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
    static const jinja::Regex kSum =
        jinja::FixedRegex("(md5|sha1|sha224|sha256|sha384|sha512):([0-9a-fA-F]+)");
    std::string c = Str(args, "checksum");
    auto m = kSum.FullMatch(c);
    if (!m.ok() || !*m)
      return Fail("get_url: checksum must be <algorithm>:<hex digest> (sha256:...), not '" + c +
                  "'");
    algo = *(*m)->Group(c, 1);
    sum = *(*m)->Group(c, 2);
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

// package: the distribution's package manager, which on the nodes
// provisiond drives natively (Debian and its derivatives) is apt. Ansible's
// names for the states (installed, removed) are read as apt's.
ModuleOutcome RunPackage(const json& args, ModuleContext& ctx) {
  const std::string use = Str(args, "use", "auto");
  if (use != "auto" && use != "apt")
    return Fail("package: use '" + use + "': the native runner drives apt only");
  std::string state = Str(args, "state", "present");
  if (state == "installed") state = "present";
  if (state == "removed") state = "absent";
  json apt = {{"name", args.contains("name") ? args["name"] : json()}, {"state", state}};
  ModuleOutcome o = RunApt(apt, ctx);
  if (o.failed && o.msg.rfind("apt: ", 0) == 0) o.msg = "package: " + o.msg.substr(5);
  return o;
}

}  // namespace

std::vector<ModuleSpec> PackageModules() {
  std::vector<ModuleSpec> t;
  t.push_back(Module(
      "apt",
      {A("name", false, {}, {"pkg", "package"}), A("state", false, {"present", "absent", "latest"}),
       A("update_cache", false, {}, {"update-cache"}), A("cache_valid_time"),
       A("install_recommends", false, {}, {"install-recommends"}), A("deb"), A("purge"),
       A("autoremove")},
      RunApt));
  t.push_back(
      Module("package",
             {A("name", true, {}, {"pkg"}),
              A("state", false, {"present", "absent", "latest", "installed", "removed"}), A("use")},
             RunPackage));
  t.push_back(Module("apt_repository",
                     {A("repo", true), A("state", false, {"present", "absent"}), A("filename"),
                      A("update_cache", false, {}, {"update-cache"}), A("codename"), A("mode"),
                      // Not in Ansible: a keyring file on the node, written as
                      // [signed-by=...]. Keys cannot be fetched from a keyserver
                      // offline; the key file must be put there first (copy).
                      A("signed_by")},
                     RunAptRepository));
  t.push_back(Module("get_url",
                     WithAttrs({A("url", true), A("dest", true), A("checksum"), A("force"),
                                A("timeout"), A("validate_certs")}),
                     RunGetUrl));
  return t;
}

}  // namespace prov::modules
