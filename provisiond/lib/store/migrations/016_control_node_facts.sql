-- More of what each control node says of itself (ha/control_nodes.h):
-- nfs_clients, the TCP connections the active's NFS server holds, a JSON
-- array of "10.99.0.1:2049>10.99.0.101:872" (the next active tells each
-- client that its connection ended, so that it reconnects at once:
-- ha/nfs_clients.h); alike, a JSON object of digests of what must be alike
-- on every control node ("control key", "profiles", "playbooks").
ALTER TABLE control_nodes ADD COLUMN nfs_clients TEXT NOT NULL DEFAULT '[]';
ALTER TABLE control_nodes ADD COLUMN alike TEXT NOT NULL DEFAULT '{}';
