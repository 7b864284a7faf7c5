-- Each node gets its own token for boot and phone-home requests, and the
-- inventory remembers the last boot stage it passed (for `node why` and the
-- web page without scanning events).
ALTER TABLE nodes ADD COLUMN token TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN stage TEXT NOT NULL DEFAULT '';
UPDATE nodes SET token = lower(hex(randomblob(16))) WHERE token = '';
CREATE INDEX events_node ON events(node_id, id);
