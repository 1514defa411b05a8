-- The task an in-flight idempotency key's request created, bound in the
-- transaction that inserts the task; '' for a key bound to no task. A bound
-- key is never released: a retry answers for that task.
ALTER TABLE idempotency_keys ADD COLUMN task_id TEXT NOT NULL DEFAULT '';
