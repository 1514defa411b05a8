-- Cancel requests (docs/workflows.md, "Cancellation"): when a workflow was
-- asked to cancel and may run its compensation before it ends; NULL while
-- nobody asked.
ALTER TABLE tasks ADD COLUMN cancel_requested_at timestamptz;
