-- 012_job_calendar.sql - the calendar a job's partitions were built in
-- (issue 42; docs/configuration.md, timezone); the same column as the
-- SQLite store's sql/013_job_calendar.sql.
--
-- jobs.calendar: the job's timezone: and week_start:, "Europe/Berlin" or
-- "UTC sunday"; NULL for UTC with Monday weeks (every job written before
-- zones).  A start or reload that would change it while the job has
-- built partitions is refused.
ALTER TABLE jobs ADD COLUMN calendar text;
