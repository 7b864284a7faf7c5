-- The wipes of local disks the operator allowed for the node's next boot
-- (`provisionctl node storage wipe`): JSON, a list of /dev/disk/by-id names
-- or ["*"] for every disk its profile's volumes take; '' when none. Spent by
-- the hello of the boot whose overlay carried it.
ALTER TABLE nodes ADD COLUMN storage_wipe TEXT NOT NULL DEFAULT '';
