-- 009_reserved.sql - this number belongs to a migration of another branch;
-- this file keeps the numbering without gaps until that branch is merged,
-- then it goes (it changes nothing).
SELECT 1;
