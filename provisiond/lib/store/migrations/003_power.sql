-- How to power a node on and off: {"driver": "wol"|"ipmi"|"command", ...}.
ALTER TABLE nodes ADD COLUMN power TEXT NOT NULL DEFAULT '{}';
