#!/usr/bin/env bash
# The lab's power driver: provisiond's "command" power driver runs
#   power.sh on|off|cycle HOSTNAME MAC
# inside the lab namespace, with LAB_NS and LAB_DIR from the lab's environment.
# The VM is named after the node; its firmware comes from $LAB_DIR/firmware
# ("HOSTNAME bios|uefi|uefi-pxe|uefi-sb|uefi-http|disk" lines; bios when not
# listed; disk: an installed machine that boots $LAB_DIR/HOSTNAME.root.img, made
# by installed-disk.sh, and never netboots), its local disks
# from $LAB_DIR/disks ("HOSTNAME SERIAL SIZE" lines: a virtio disk with that
# serial, /dev/disk/by-id/virtio-SERIAL on the node, kept in
# $LAB_DIR/HOSTNAME-SERIAL.img across power cycles like a real one).
set -euo pipefail
action="${1:-}" name="${2:-}" mac="${3:-}"
[ -n "${LAB_NS:-}" ] && [ -n "${LAB_DIR:-}" ] || { echo "power.sh: not inside a lab (LAB_NS, LAB_DIR)" >&2; exit 2; }
[ -n "$name" ] && [ -n "$mac" ] || { echo "usage: power.sh on|off|cycle HOSTNAME MAC" >&2; exit 2; }
# shellcheck source-path=SCRIPTDIR source=lab.sh
source "$(dirname "${BASH_SOURCE[0]}")/lab.sh"
mode="$(awk -v n="$name" '$1 == n {print $2}' "$LAB_DIR/firmware" 2>/dev/null || true)"
mode="${mode:-bios}"
LAB_VM_EXTRA_ARGS=()
while read -r host serial size; do
  [ "$host" = "$name" ] || continue
  img="$LAB_DIR/$name-$serial.img"
  [ -e "$img" ] || truncate -s "$size" "$img"
  # shellcheck disable=SC2054 # commas belong to QEMU's option syntax
  LAB_VM_EXTRA_ARGS+=(-drive "file=$img,format=raw,if=none,id=disk-$serial,cache=unsafe"
    -device "virtio-blk-pci,drive=disk-$serial,serial=$serial")
done < <(cat "$LAB_DIR/disks" 2>/dev/null || true)
case "$action" in
  on)
    if lab_vm_running "$name"; then echo "$name is on already"; exit 0; fi
    lab_vm_start "$name" "$mac" "$mode" 2>>"$LAB_DIR/power.log"
    echo "$name powered on ($mode)"
    ;;
  off)
    lab_vm_running "$name" || { echo "$name is off already"; exit 0; }
    lab_vm_stop "$name" 2>>"$LAB_DIR/power.log"
    echo "$name powered off"
    ;;
  cycle)
    # Off, then on: a new QEMU process, as a plug that cuts the power gives a
    # machine a cold start. (QEMU's system_reset keeps the process, and under
    # TCG the guest kernel then took 34 s instead of 0.1 s to unpack its
    # initramfs alone, and minutes beside other load: lab.images, 2026-11-28.)
    if lab_vm_running "$name"; then
      lab_vm_stop "$name" 2>>"$LAB_DIR/power.log"
      lab_vm_start "$name" "$mac" "$mode" 2>>"$LAB_DIR/power.log"
      echo "$name power-cycled ($mode)"
    else
      lab_vm_start "$name" "$mac" "$mode" 2>>"$LAB_DIR/power.log"
      echo "$name was off; powered on ($mode)"
    fi
    ;;
  *) echo "power.sh: action must be on, off or cycle" >&2; exit 2 ;;
esac
