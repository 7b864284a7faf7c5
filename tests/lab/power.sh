#!/usr/bin/env bash
# The lab's power driver: provisiond's "command" power driver runs
#   power.sh on|off|cycle|status HOSTNAME MAC
# inside the lab namespace, with LAB_NS and LAB_DIR from the lab's environment
# (so do the lab's stand-in plug, Redfish and IPMI BMCs: plug.py, redfish.py,
# bmc.py). status prints "on" or "off". LAB_BOOT_ONCE=pxe (a BMC's one-time
# network boot override) when on or cycle starts the VM: it boots from the
# network this once, noted in $LAB_DIR/power.log.
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
[ -n "$name" ] && [ -n "$mac" ] || { echo "usage: power.sh on|off|cycle|status HOSTNAME MAC" >&2; exit 2; }
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
# Starts the VM. LAB_BOOT_ONCE=pxe: a bios VM gets QEMU's -boot once=n (merged
# with lab_vm_start's order=n,strict=on, which netboots it anyway today); the
# uefi modes netboot anyway (their NIC is bootindex=1), and a disk machine
# cannot (QEMU's direct kernel boot), which the log says.
start_vm() {
  if [ "${LAB_BOOT_ONCE:-}" = pxe ]; then
    if [ "$mode" = disk ]; then
      echo "$name: LAB_BOOT_ONCE=pxe ignored: a disk machine never netboots" >>"$LAB_DIR/power.log"
    else
      if [ "$mode" = bios ]; then LAB_VM_EXTRA_ARGS+=(-boot once=n); fi
      echo "$name: boot once from the network (LAB_BOOT_ONCE=pxe)" >>"$LAB_DIR/power.log"
    fi
  fi
  lab_vm_start "$name" "$mac" "$mode" 2>>"$LAB_DIR/power.log"
}
case "$action" in
  on)
    if lab_vm_running "$name"; then echo "$name is on already"; exit 0; fi
    start_vm
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
      start_vm
      echo "$name power-cycled ($mode)"
    else
      start_vm
      echo "$name was off; powered on ($mode)"
    fi
    ;;
  status)
    if lab_vm_running "$name"; then echo on; else echo off; fi
    ;;
  *) echo "power.sh: action must be on, off, cycle or status" >&2; exit 2 ;;
esac
