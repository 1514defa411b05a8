-- The memory limit of a task's plugin calls, in bytes; 0 means the host's
-- default (BRIEF §3.4: a per-task memory limit).
ALTER TABLE tasks ADD COLUMN memory_limit INTEGER NOT NULL DEFAULT 0;
