-- More of what each control node says of itself
-- (store/migrations/016_control_node_facts.sql).
ALTER TABLE control_nodes ADD COLUMN nfs_clients TEXT COLLATE "C" NOT NULL DEFAULT '[]';
ALTER TABLE control_nodes ADD COLUMN alike TEXT COLLATE "C" NOT NULL DEFAULT '{}';
