-- The latest progress report of a task's activity, as JSON
-- {"done", "total", "message", "updated_at"} (Unix milliseconds), or NULL
-- before the first report; the task.progress events keep the history.
ALTER TABLE tasks ADD COLUMN progress TEXT;
