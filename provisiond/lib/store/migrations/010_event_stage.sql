-- A boot event's stage in a column of its own (store/boot_stage.h names the
-- stages), no longer read back from the front of its text. Boot events
-- written before get theirs from that text, once, here.
ALTER TABLE events ADD COLUMN stage TEXT NOT NULL DEFAULT '';
UPDATE events SET stage = CASE WHEN instr(detail, ':') > 0
                               THEN substr(detail, 1, instr(detail, ':') - 1)
                               ELSE detail END
  WHERE kind = 'boot';
