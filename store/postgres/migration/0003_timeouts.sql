-- Timeouts (docs/workflows.md, "Timeouts"). deadline is a workflow's
-- absolute execution deadline, which a run that continues the execution
-- copies; run_deadline is the end of the current attempt's run timeout,
-- set when the attempt starts; start_deadline is when a queued task fails
-- for waiting too long in the queue (its schedule-to-start timeout, or a
-- queued workflow's execution deadline). The *_ms columns are the
-- relative timeouts as the task was created with them; 0: none.
ALTER TABLE tasks
	ADD COLUMN deadline             timestamptz,
	ADD COLUMN run_timeout_ms       bigint NOT NULL DEFAULT 0,
	ADD COLUMN run_deadline         timestamptz,
	ADD COLUMN schedule_to_start_ms bigint NOT NULL DEFAULT 0,
	ADD COLUMN start_deadline       timestamptz,
	ADD COLUMN heartbeat_timeout_ms bigint NOT NULL DEFAULT 0;

-- Queued tasks with a start deadline, by deadline, for TaskOverdue: empty,
-- and free to keep, while no task has one.
CREATE INDEX tasks_start_deadline ON tasks (start_deadline, id)
	WHERE status = 'queued' AND start_deadline IS NOT NULL;
