-- What an installed machine's image stage was made of when it last ran on it
-- (configure/configurator.cc: its bake playbooks' files, vars and runners, as
-- a key): its disk keeps what they installed, so they run again only when the
-- key changes, not at each reboot. '' until they ran; cleared by an adoption.
ALTER TABLE nodes ADD COLUMN installed_baked TEXT NOT NULL DEFAULT '';
