-- The lease of the host that claimed a task (store.Lease): lease_token is
-- the fencing token of the last lease handed out (it only grows, and is
-- kept once the lease is released); lease_host and lease_expires_at (Unix
-- milliseconds) are '' and NULL while no lease is held.
ALTER TABLE tasks ADD COLUMN lease_host TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN lease_expires_at INTEGER;

-- Held leases by expiry, for TaskReclaim.
CREATE INDEX tasks_lease ON tasks (lease_expires_at, id) WHERE lease_expires_at IS NOT NULL;
