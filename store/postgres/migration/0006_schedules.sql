-- Schedules (docs/workflows.md, "Schedules"): a recurring start of a task,
-- per owner. definition is the runtime's JSON document (spec and action);
-- last_tick_at is the cursor, the nominal time of the last tick handled;
-- next_run_at when the next tick falls due, NULL while paused or ended;
-- version the token of the compare-and-sets.
CREATE TABLE schedules (
	owner_client_id text        NOT NULL,
	id              text        NOT NULL,
	definition      text        NOT NULL,
	paused          boolean     NOT NULL DEFAULT false,
	note            text        NOT NULL DEFAULT '',
	last_tick_at    timestamptz NOT NULL,
	next_run_at     timestamptz,
	buffered        text        NOT NULL DEFAULT '',
	missed          bigint      NOT NULL DEFAULT 0,
	skipped         bigint      NOT NULL DEFAULT 0,
	version         bigint      NOT NULL DEFAULT 1,
	created_at      timestamptz NOT NULL,
	updated_at      timestamptz NOT NULL,
	PRIMARY KEY (owner_client_id, id)
);

-- The scheduler's index: the due schedules, earliest first.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE next_run_at IS NOT NULL;

-- The latest runs of each schedule (at most a few are kept): the run key is
-- the tick's identity, so a tick can start one task only.
CREATE TABLE schedule_runs (
	owner_client_id text        NOT NULL,
	schedule_id     text        NOT NULL,
	run_key         text        NOT NULL,
	tick_at         timestamptz NOT NULL,
	started_at      timestamptz NOT NULL,
	task_id         text        NOT NULL,
	PRIMARY KEY (owner_client_id, schedule_id, run_key)
);

CREATE INDEX schedule_runs_latest ON schedule_runs (owner_client_id, schedule_id, started_at);
