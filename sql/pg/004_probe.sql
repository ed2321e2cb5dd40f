-- 003_probe.sql: what a node writes to learn whether the state store can
-- be written again after a failure (store_pg.c, pgst_probe_write).  A
-- commit that only takes a transaction id succeeds on a database whose
-- filesystem is full, as do updates that fit the pages a table has; this
-- table is emptied (TRUNCATE: a new, empty file) and filled with pages of
-- its own in one transaction, so that the probe succeeds only when the
-- server can extend a file of the database by that much.  Unlogged: its
-- pages cost no WAL.  One row a page: 8000 bytes stored as they are.
CREATE UNLOGGED TABLE store_probe (pad text NOT NULL);
ALTER TABLE store_probe ALTER COLUMN pad SET STORAGE PLAIN;
