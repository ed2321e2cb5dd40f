-- 013_job_calendar.sql - the calendar a job's partitions were built in
-- (issue 42; docs/configuration.md, timezone).
--
-- jobs.calendar: the job's timezone: and week_start: when its keys were
-- last accepted, "Europe/Berlin", "UTC sunday" or "America/Chicago
-- sunday"; NULL for UTC with Monday weeks, so every job written before
-- zones is untouched.  A start or reload that would change it while the
-- job has built partitions (rows in partitions) is refused: its keys
-- would name other intervals.
ALTER TABLE jobs ADD COLUMN calendar TEXT;
