-- Machines that boot their own installed OS (adopted over SSH: `provisionctl
-- node adopt`): 1. They are never netbooted (their boot script, if they ask,
-- boots the local disk) and get their profile's image-stage playbooks at
-- configure time, as they have no image to bake them into.
ALTER TABLE nodes ADD COLUMN installed INTEGER NOT NULL DEFAULT 0;
