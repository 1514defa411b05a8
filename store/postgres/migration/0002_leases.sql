-- The lease of the host that claimed a task (store.Lease): lease_token is
-- the fencing token of the last lease handed out (it only grows, and is
-- kept once the lease is released); lease_host and lease_expires_at are ''
-- and NULL while no lease is held. Expiry times come from the database's
-- clock, so the hosts' clocks may disagree.
ALTER TABLE tasks
	ADD COLUMN lease_host       text        NOT NULL DEFAULT '',
	ADD COLUMN lease_token      bigint      NOT NULL DEFAULT 0,
	ADD COLUMN lease_expires_at timestamptz;

-- Tasks claimed before leases existed are held by nobody: they count as
-- expired, so the next TaskReclaim applies their policy.
UPDATE tasks SET lease_expires_at = 'epoch'
	WHERE status IN ('loading', 'running', 'cancelling')
	AND NOT EXISTS (SELECT 1 FROM workflow_waits w WHERE w.task_id = tasks.id);

-- Held leases by expiry, for TaskReclaim.
CREATE INDEX tasks_lease ON tasks (lease_expires_at, id) WHERE lease_expires_at IS NOT NULL;
