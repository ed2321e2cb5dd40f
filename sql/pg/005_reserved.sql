-- 005_reserved.sql - a placeholder: this number belongs to a migration
-- of another line of work, not yet merged here.  No change; when that
-- migration is merged, it replaces this file (the same number).
SELECT 1;
