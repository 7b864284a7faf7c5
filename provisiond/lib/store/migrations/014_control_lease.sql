-- Which control node is active, when several share one PostgreSQL inventory
-- (ha/lease.h): one row, 'active', taken by a control node when it is free
-- or has lapsed (expires, in the database's clock, unix milliseconds), renewed
-- by its holder. epoch counts the takeovers. Unused with SQLite (one control
-- node), kept so that the two schemas stay the same.
CREATE TABLE control_lease (
  name    TEXT PRIMARY KEY,
  holder  TEXT NOT NULL,
  epoch   INTEGER NOT NULL,
  since   INTEGER NOT NULL,
  expires INTEGER NOT NULL
);
