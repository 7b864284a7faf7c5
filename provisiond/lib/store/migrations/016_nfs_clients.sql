-- The TCP connections the active control node's NFS server holds, as it
-- last reported them (ha/nfs_clients.h): a JSON array of
-- "10.99.0.1:2049>10.99.0.101:872". The next active tells each client that
-- its connection ended, so that it reconnects at once.
ALTER TABLE control_nodes ADD COLUMN nfs_clients TEXT NOT NULL DEFAULT '[]';
