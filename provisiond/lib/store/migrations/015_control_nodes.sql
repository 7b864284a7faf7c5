-- What each control node sharing a PostgreSQL inventory says of itself
-- (ha/control_nodes.h): its role, the active's API for the standbys' image
-- copies (with its TLS key's pin), which image versions its image store
-- holds and what it is copying now, as of `reported` (the database's clock,
-- unix milliseconds). Unused with SQLite (one control node), kept so that
-- the two schemas stay the same.
CREATE TABLE control_nodes (
  name      TEXT PRIMARY KEY,
  role      TEXT NOT NULL,
  url       TEXT NOT NULL DEFAULT '',
  tls_pin   TEXT NOT NULL DEFAULT '',
  images    TEXT NOT NULL DEFAULT '[]',   -- JSON array of "name@version"
  current   TEXT NOT NULL DEFAULT '{}',   -- JSON object: name -> version
  copying   TEXT NOT NULL DEFAULT '',
  reported  INTEGER NOT NULL
);
