-- The loader a node's UEFI firmware is given, when the operator chose one for
-- this node ('' : its profile's choice, else dhcp.uefi_loader): 'grub' (the
-- signed chain) or 'ipxe'. BIOS firmware always gets iPXE.
ALTER TABLE nodes ADD COLUMN uefi_loader TEXT NOT NULL DEFAULT '';

-- Moves when which loader a node gets may have changed: a node enrolled or
-- removed, its loader, profile or MAC changed, it left or joined the
-- discovered and retired nodes (which get the default), or a profile applied
-- (the same version may now choose another loader). provisiond then brings
-- the per-node directories of its TFTP root in step (boot/boot.h).
INSERT INTO counters (name, value) VALUES ('boot_loaders', 1);

CREATE TRIGGER nodes_boot_loaders_insert AFTER INSERT ON nodes
WHEN new.state NOT IN ('discovered', 'retired')
BEGIN
  UPDATE counters SET value = value + 1 WHERE name = 'boot_loaders';
END;

CREATE TRIGGER nodes_boot_loaders_delete AFTER DELETE ON nodes
BEGIN
  UPDATE counters SET value = value + 1 WHERE name = 'boot_loaders';
END;

CREATE TRIGGER nodes_boot_loaders_update
AFTER UPDATE OF mac, state, profile_version, uefi_loader ON nodes
WHEN old.mac IS NOT new.mac
  OR (old.state IN ('discovered', 'retired')) IS NOT (new.state IN ('discovered', 'retired'))
  OR old.profile_version IS NOT new.profile_version OR old.uefi_loader IS NOT new.uefi_loader
BEGIN
  UPDATE counters SET value = value + 1 WHERE name = 'boot_loaders';
END;

CREATE TRIGGER applied_profiles_boot_loaders AFTER INSERT ON applied_profiles
BEGIN
  UPDATE counters SET value = value + 1 WHERE name = 'boot_loaders';
END;
