-- What each control node says of itself (store/migrations/015_control_nodes.sql).
CREATE TABLE control_nodes (
  name      TEXT COLLATE "C" PRIMARY KEY,
  role      TEXT COLLATE "C" NOT NULL,
  url       TEXT COLLATE "C" NOT NULL DEFAULT '',
  tls_pin   TEXT COLLATE "C" NOT NULL DEFAULT '',
  images    TEXT COLLATE "C" NOT NULL DEFAULT '[]',
  current   TEXT COLLATE "C" NOT NULL DEFAULT '{}',
  copying   TEXT COLLATE "C" NOT NULL DEFAULT '',
  reported  BIGINT NOT NULL
);
