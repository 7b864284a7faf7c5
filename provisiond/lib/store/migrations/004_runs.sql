-- Configuration runs over SSH: one row per node and run (a profile's
-- playbooks, a playbook run by hand, a command), one row per task result.
-- `configured` on a node is the profile hash its current boot was last
-- configured with successfully, so applying the same version again runs
-- nothing; a hello (a new boot: the root overlay is fresh) clears it.
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  node_id INTEGER NOT NULL,
  node TEXT NOT NULL,
  kind TEXT NOT NULL,
  what TEXT NOT NULL,
  profile_sha256 TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL,
  started INTEGER NOT NULL,
  finished INTEGER NOT NULL DEFAULT 0,
  ok INTEGER NOT NULL DEFAULT 0,
  changed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  skipped INTEGER NOT NULL DEFAULT 0,
  message TEXT NOT NULL DEFAULT '',
  who TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_node ON runs(node_id, id);
CREATE INDEX runs_status ON runs(status);
CREATE TABLE run_tasks (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  playbook TEXT NOT NULL,
  play TEXT NOT NULL,
  task TEXT NOT NULL,
  module TEXT NOT NULL,
  location TEXT NOT NULL,
  item TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL,
  changed INTEGER NOT NULL,
  exit_code INTEGER NOT NULL,
  stdout TEXT NOT NULL,
  stderr TEXT NOT NULL,
  msg TEXT NOT NULL,
  duration_ms INTEGER NOT NULL
);
CREATE INDEX run_tasks_run ON run_tasks(run_id, id);
ALTER TABLE nodes ADD COLUMN configured TEXT NOT NULL DEFAULT '';
