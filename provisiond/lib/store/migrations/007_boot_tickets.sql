-- A one-boot ticket per node: made when its boot script is rendered, handed to
-- the initrd in a small per-node initrd part (never on the kernel command
-- line), and spent by the hello of that boot. A hello that changes the pinned
-- host key must carry it. '' when none is outstanding.
ALTER TABLE nodes ADD COLUMN ticket TEXT NOT NULL DEFAULT '';
