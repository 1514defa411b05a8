-- weft schema, version 2: waiting workflows (docs/workflows.md). A workflow
-- that waits for an activity, a timer or a signal stays running and holds no
-- worker; its row here says when it falls due. WorkflowClaim hands it out
-- again and deletes the row; a run that waits again writes a new one.

CREATE TABLE workflow_waits (
	task_id TEXT    PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	attempt INTEGER NOT NULL, -- the task's attempt when it began to wait; a row of an older attempt is stale
	wake_at INTEGER           -- Unix ms when it falls due; NULL until an event wakes it
) STRICT, WITHOUT ROWID;

-- The due queue: only rows with a wake time, earliest first.
CREATE INDEX workflow_waits_due ON workflow_waits (wake_at) WHERE wake_at IS NOT NULL;
