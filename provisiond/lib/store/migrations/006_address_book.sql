-- Node addresses change far less often than node rows do (every boot stage,
-- phone-home and fact update writes a row): this counter moves only when what
-- a node's address entry holds changes (its MAC, IP, hostname, or whether it
-- is listed at all: discovered and retired nodes are not). The dnsmasq hosts
-- file and every node's /etc/hosts are rebuilt only when it has moved.
CREATE TABLE counters (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
INSERT INTO counters (name, value) VALUES ('addresses', 1);

CREATE TRIGGER nodes_addresses_insert AFTER INSERT ON nodes
BEGIN
  UPDATE counters SET value = value + 1 WHERE name = 'addresses';
END;

CREATE TRIGGER nodes_addresses_delete AFTER DELETE ON nodes
BEGIN
  UPDATE counters SET value = value + 1 WHERE name = 'addresses';
END;

CREATE TRIGGER nodes_addresses_update AFTER UPDATE OF mac, ip, hostname, state ON nodes
WHEN old.mac IS NOT new.mac OR old.ip IS NOT new.ip OR old.hostname IS NOT new.hostname
  OR (old.state IN ('discovered', 'retired')) IS NOT (new.state IN ('discovered', 'retired'))
BEGIN
  UPDATE counters SET value = value + 1 WHERE name = 'addresses';
END;

-- A TFTP download is known to dnsmasq only by the client's address.
CREATE INDEX nodes_ip ON nodes(ip);
