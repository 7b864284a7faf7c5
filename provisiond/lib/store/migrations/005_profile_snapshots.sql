-- Applied profiles are immutable snapshots (<data_dir>/snapshots/<sha256>/).
-- A row says which snapshot stands for its profile version: the one with the
-- highest seq. Applying a version again, or an older snapshot of it
-- (rollback), gives that snapshot's row the next seq.
CREATE TABLE profile_snapshots (
  sha256  TEXT PRIMARY KEY,
  version TEXT NOT NULL,
  seq     INTEGER NOT NULL,
  time    INTEGER NOT NULL,
  who     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX profile_snapshots_version ON profile_snapshots(version, seq);
