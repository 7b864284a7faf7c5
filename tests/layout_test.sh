#!/usr/bin/env bash
# The library's layout is its architecture (provisiond/lib/README.md): each
# folder may include only from the folders this table allows, so the node's
# path stays readable and no cycle creeps in. Also: no folder holds more than a
# dozen units and no unit is over 1,500 lines (tests aside); provisionctl
# includes nothing of the daemon but base/; boot stages are spelled in one
# unit only, as are boot loaders' names; power drivers only under power/.
# Usage: layout_test.sh REPO
set -uo pipefail
repo="${1:?usage: layout_test.sh REPO}"
lib="$repo/provisiond/lib"
declare -A allowed=(
  [base]=""
  [http]="base"
  [db]="base"
  [store]="base db"
  [ha]="base db images"
  [power]="base store"
  [playbook]="base"
  [profiles]="base store power playbook"
  [dhcp]="base store"
  [images]="base store playbook profiles"
  [boot]="base http store profiles images"
  [hello]="base http store profiles"
  [configure]="base store profiles playbook"
  [bake]="base store profiles playbook images configure"
  [console]="base db store"
  [watch]="base store profiles hello configure"
  [api]="base http store power playbook profiles dhcp images boot hello configure console bake ha"
)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for dir in "$lib"/*/; do
  d="$(basename "$dir")"
  [ "$d" = migrations ] && continue
  [ -v "allowed[$d]" ] || { fail "lib/$d is not in the layout table (provisiond/lib/README.md)"; continue; }
  while IFS=: read -r file _ inc; do
    top="$(sed -E 's|#include "([a-z_]+)/.*|\1|' <<<"$inc")"
    [ "$top" = "$d" ] && continue
    [[ " ${allowed[$d]} " == *" $top "* ]] ||
      fail "${file#"$repo"/} includes $top/ ($inc), which lib/$d may not use"
  done < <(grep -rn --include='*.h' --include='*.cc' -E '^#include "[a-z_]+/' "$dir" |
    grep -v '_test\.cc:')
  units="$(find "$dir" -maxdepth 1 -name '*.cc' ! -name '*_test.cc' | wc -l)"
  [ "$units" -le 12 ] || fail "lib/$d has $units units (at most 12: split it)"
done

while read -r lines file; do
  [ "$file" = total ] && continue
  [ "$lines" -le 1500 ] || fail "${file#"$repo"/} has $lines lines (at most 1,500)"
done < <(find "$lib" "$repo/provisiond/ctl" -name '*.cc' ! -name '*_test.cc' -print0 |
  xargs -0 wc -l)

while IFS=: read -r file _ inc; do
  fail "${file#"$repo"/} (provisionctl) includes the daemon's $inc"
done < <(grep -rn -E '^#include "[a-z_]+/' "$repo/provisiond/ctl" |
  grep -v -E '#include "(base|output|testing|verbs)/')  # base/ and its own folders

# Boot stages have one registry, store/boot_stage.cc (names, order, chains):
# no other unit spells a stage's name, compares a stage as text or reads one
# back from an event's text.
while IFS= read -r hit; do
  fail "${hit#"$repo"/}: a boot stage as text (store/boot_stage.h has them as BootStage)"
done < <(grep -rn --include='*.cc' --include='*.h' -E \
  '"(ipxe-binary|grub-config)"|stage (==|!=|=) "|detail\.find\(.:.\)' "$lib" "$repo/provisiond/ctl" |
  grep -v -E '_test\.cc:|/store/boot_stage\.cc:')

# Boot loaders are named in one registry, store/boot_stage.cc (LoaderName;
# boot/loader.cc builds each by its chain): no other unit spells "ipxe" or
# "grub" in code (comments aside).
while IFS= read -r hit; do
  fail "${hit#"$repo"/}: a boot loader's name outside store/boot_stage.cc (LoaderName)"
done < <(grep -rn --include='*.cc' --include='*.h' -E '"(ipxe|grub)"' "$lib" "$repo/provisiond/ctl" |
  grep -v -E '_test\.cc:|/store/boot_stage\.cc:|^[^:]+:[0-9]+: *//')

# SQLite and PostgreSQL through one layer, db/sql.h (owned handles and
# statements, every step a Status, numbered migrations): no unit above its
# two backends calls sqlite3_* or PQ* itself.
while IFS= read -r hit; do
  fail "${hit#"$repo"/}: the database called directly (use db/sql.h)"
done < <(grep -rn --include='*.cc' --include='*.h' \
  -E 'sqlite3_[a-z_]+\(|#include <sqlite3\.h>|\bPQ[a-z]+\(|#include <libpq-fe\.h>' \
  "$lib" "$repo/provisiond/ctl" | grep -v -E '_test\.cc:|/lib/db/sql_(sqlite|postgres)\.cc:')

# Power drivers have one registry, power/registry.cc (each driver its own
# file under power/): no unit outside power/ spells a driver's name (the CLI
# sends the spec and prints provisiond's answer).
while IFS= read -r hit; do
  fail "${hit#"$repo"/}: a power driver's name outside power/ (power/registry.h has them)"
done < <(grep -rn --include='*.cc' --include='*.h' -E '"(wol|ipmi)"' "$lib" "$repo/provisiond/ctl" |
  grep -v -E '_test\.cc:|/lib/power/')

if [ "$fails" -gt 0 ]; then
  echo "$fails layout problem(s)"
  exit 1
fi
echo "layout: every include follows the table; folders and units within their sizes"
