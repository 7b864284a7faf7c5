-- Which control node is active (store/migrations/014_control_lease.sql).
CREATE TABLE control_lease (
  name    TEXT COLLATE "C" PRIMARY KEY,
  holder  TEXT COLLATE "C" NOT NULL,
  epoch   BIGINT NOT NULL,
  since   BIGINT NOT NULL,
  expires BIGINT NOT NULL
);
