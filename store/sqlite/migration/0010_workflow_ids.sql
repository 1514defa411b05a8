-- Workflow ids (docs/workflows.md, "Workflow ids"): a caller-chosen name of
-- a workflow task, unique among its owner's open runs; NULL for a task
-- without one. continued_from is the run a run continued as new from;
-- parent_close_policy what a child workflow's parent does to it at its end.
ALTER TABLE tasks ADD COLUMN workflow_id TEXT;
ALTER TABLE tasks ADD COLUMN continued_from TEXT;
ALTER TABLE tasks ADD COLUMN parent_close_policy TEXT;

-- At most one open run of an owner holds a workflow id.
CREATE UNIQUE INDEX tasks_workflow_open ON tasks (owner_client_id, workflow_id)
	WHERE workflow_id IS NOT NULL AND status IN ('queued', 'loading', 'running', 'cancelling');
-- The runs of a workflow id, newest last: the latest run, and the chain.
CREATE INDEX tasks_workflow_runs ON tasks (owner_client_id, workflow_id, id)
	WHERE workflow_id IS NOT NULL;
