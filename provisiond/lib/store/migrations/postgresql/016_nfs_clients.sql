-- The active's NFS clients (store/migrations/016_nfs_clients.sql).
ALTER TABLE control_nodes ADD COLUMN nfs_clients TEXT COLLATE "C" NOT NULL DEFAULT '[]';
