-- Schedules (docs/workflows.md, "Schedules"): a recurring start of a task,
-- per owner. definition is the runtime's JSON document (spec and action);
-- last_tick_at is the cursor, the nominal time of the last tick handled;
-- next_run_at when the next tick falls due, NULL while paused or ended;
-- version the token of the compare-and-sets.
CREATE TABLE schedules (
	owner_client_id TEXT    NOT NULL,
	id              TEXT    NOT NULL,
	definition      TEXT    NOT NULL,
	paused          INTEGER NOT NULL DEFAULT 0,
	note            TEXT    NOT NULL DEFAULT '',
	last_tick_at    INTEGER NOT NULL,
	next_run_at     INTEGER,
	buffered        TEXT    NOT NULL DEFAULT '',
	missed          INTEGER NOT NULL DEFAULT 0,
	skipped         INTEGER NOT NULL DEFAULT 0,
	version         INTEGER NOT NULL DEFAULT 1,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	PRIMARY KEY (owner_client_id, id)
) STRICT, WITHOUT ROWID;

-- The scheduler's index: the due schedules, earliest first.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE next_run_at IS NOT NULL;

-- The latest runs of each schedule (at most a few are kept): the run key is
-- the tick's identity, so a tick can start one task only.
CREATE TABLE schedule_runs (
	owner_client_id TEXT    NOT NULL,
	schedule_id     TEXT    NOT NULL,
	run_key         TEXT    NOT NULL,
	tick_at         INTEGER NOT NULL,
	started_at      INTEGER NOT NULL,
	task_id         TEXT    NOT NULL,
	PRIMARY KEY (owner_client_id, schedule_id, run_key)
) STRICT, WITHOUT ROWID;

CREATE INDEX schedule_runs_latest ON schedule_runs (owner_client_id, schedule_id, started_at);
