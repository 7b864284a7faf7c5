-- The inventory: one row per machine that ever asked to boot or was enrolled.
CREATE TABLE nodes (
  id              INTEGER PRIMARY KEY,
  mac             TEXT NOT NULL UNIQUE,
  hostname        TEXT UNIQUE,            -- NULL while only discovered
  ip              TEXT,
  state           TEXT NOT NULL,
  reason          TEXT NOT NULL DEFAULT '',  -- why it is failed (or in maintenance)
  profile_version TEXT,
  image_version   TEXT,
  facts           TEXT NOT NULL DEFAULT '{}',  -- JSON, from phone-home
  host_key        TEXT,                   -- pinned SSH host public key
  last_seen       INTEGER,                -- unix milliseconds
  created         INTEGER NOT NULL,
  updated         INTEGER NOT NULL
);
CREATE INDEX nodes_state ON nodes(state);

-- Append-only history: every state change and every boot stage.
CREATE TABLE events (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  time    INTEGER NOT NULL,               -- unix milliseconds
  node_id INTEGER REFERENCES nodes(id) ON DELETE SET NULL,
  node    TEXT NOT NULL DEFAULT '',       -- hostname (or MAC) when it happened
  kind    TEXT NOT NULL,
  detail  TEXT NOT NULL DEFAULT '',
  who     TEXT NOT NULL DEFAULT ''
);

-- Every `profile apply`, with the content hash of what was applied.
CREATE TABLE applied_profiles (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  version TEXT NOT NULL,
  sha256  TEXT NOT NULL,
  time    INTEGER NOT NULL,
  who     TEXT NOT NULL DEFAULT ''
);
