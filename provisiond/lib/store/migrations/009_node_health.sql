-- The node's latest health checks (a configure run's, or `node check`): JSON
-- {"time": ms, "status": "ok|failed|unreachable", "run": id, "checks":
-- [{"name", "status", "detail"}]}; '' when never checked.
ALTER TABLE nodes ADD COLUMN health TEXT NOT NULL DEFAULT '';
