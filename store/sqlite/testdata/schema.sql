CREATE TABLE clients (
	id         TEXT    PRIMARY KEY,
	name       TEXT    NOT NULL,
	token_hash BLOB    NOT NULL UNIQUE,
	scopes     TEXT    NOT NULL, -- JSON array of strings
	created_at INTEGER NOT NULL,
	revoked_at INTEGER           -- NULL while active
, max_memory_limit INTEGER NOT NULL DEFAULT 0) STRICT;

CREATE TABLE idempotency_keys (
	client_id      TEXT    NOT NULL,
	key            TEXT    NOT NULL,
	request_digest BLOB    NOT NULL,
	state          TEXT    NOT NULL CHECK (state IN ('in_flight', 'done')),
	status_code    INTEGER,
	body           BLOB,
	created_at     INTEGER NOT NULL,
	expires_at     INTEGER NOT NULL, task_id TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (client_id, key)
) STRICT;

CREATE TABLE modules (
	name       TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	digest     TEXT    NOT NULL,
	size       INTEGER NOT NULL,
	functions  TEXT    NOT NULL, -- JSON array of {name, kind}
	created_at INTEGER NOT NULL,
	PRIMARY KEY (name, version)
) STRICT;

CREATE TABLE pairings (
	id         TEXT    PRIMARY KEY,
	code_hash  BLOB    NOT NULL UNIQUE,
	scopes     TEXT    NOT NULL, -- JSON array of strings
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	used_at    INTEGER,          -- NULL until redeemed
	client_id  TEXT    REFERENCES clients (id)
) STRICT;

CREATE TABLE responses (
	task_id     TEXT    PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	status      TEXT    NOT NULL CHECK (status IN ('completed', 'failed', 'cancelled')),
	created_at  INTEGER NOT NULL,
	finished_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE schedule_runs (
	owner_client_id TEXT    NOT NULL,
	schedule_id     TEXT    NOT NULL,
	run_key         TEXT    NOT NULL,
	tick_at         INTEGER NOT NULL,
	started_at      INTEGER NOT NULL,
	task_id         TEXT    NOT NULL,
	PRIMARY KEY (owner_client_id, schedule_id, run_key)
) STRICT, WITHOUT ROWID;

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

CREATE TABLE schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL
) STRICT;

CREATE TABLE service_config (
	id                 INTEGER PRIMARY KEY CHECK (id = 1),
	service_id         TEXT    NOT NULL,
	retention_ms       INTEGER NOT NULL,
	idempotency_ttl_ms INTEGER NOT NULL,
	created_at         INTEGER NOT NULL,
	updated_at         INTEGER NOT NULL
) STRICT;

CREATE TABLE task_events (
	task_id    TEXT    NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	type       TEXT    NOT NULL,
	payload    TEXT    NOT NULL, -- JSON document
	created_at INTEGER NOT NULL,
	PRIMARY KEY (task_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE tasks (
	id                  TEXT    PRIMARY KEY,
	module              TEXT    NOT NULL,
	module_digest       TEXT    NOT NULL,
	function            TEXT    NOT NULL,
	kind                TEXT    NOT NULL CHECK (kind IN ('activity', 'workflow')),
	input_codec         TEXT,
	input               BLOB,
	status              TEXT    NOT NULL CHECK (status IN ('queued', 'loading', 'running', 'cancelling', 'completed', 'failed', 'cancelled')),
	on_restart          TEXT    NOT NULL CHECK (on_restart IN ('fail', 'retry', 'resume')),
	timeout_ms          INTEGER NOT NULL,
	retry               TEXT    NOT NULL, -- JSON retry policy
	attempt             INTEGER NOT NULL,
	checkpoint_codec    TEXT,
	checkpoint          BLOB,
	output_codec        TEXT,
	output              BLOB,
	error_code          TEXT,
	error_message       TEXT,
	error_type          TEXT,
	error_non_retryable INTEGER,
	error_details_codec TEXT,
	error_details       BLOB,
	owner_client_id     TEXT    NOT NULL,
	parent_task_id      TEXT,
	not_before          INTEGER NOT NULL,
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL,
	started_at          INTEGER,
	finished_at         INTEGER,          -- set exactly when status is terminal
	last_seq            INTEGER NOT NULL, memory_limit INTEGER NOT NULL DEFAULT 0, progress TEXT, lease_host TEXT NOT NULL DEFAULT '', lease_token INTEGER NOT NULL DEFAULT 0, lease_expires_at INTEGER, deadline INTEGER, run_timeout_ms INTEGER NOT NULL DEFAULT 0, run_deadline INTEGER, schedule_to_start_ms INTEGER NOT NULL DEFAULT 0, start_deadline INTEGER, heartbeat_timeout_ms INTEGER NOT NULL DEFAULT 0, workflow_id TEXT, continued_from TEXT, parent_close_policy TEXT, cancel_requested_at INTEGER,
	CHECK ((finished_at IS NULL) = (status IN ('queued', 'loading', 'running', 'cancelling')))
) STRICT;

CREATE TABLE workflow_waits (
	task_id TEXT    PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	attempt INTEGER NOT NULL, -- the task's attempt when it began to wait; a row of an older attempt is stale
	wake_at INTEGER           -- Unix ms when it falls due; NULL until an event wakes it
) STRICT, WITHOUT ROWID;

CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

CREATE INDEX modules_digest ON modules (digest);

CREATE INDEX schedule_runs_latest ON schedule_runs (owner_client_id, schedule_id, started_at);

CREATE INDEX schedules_due ON schedules (next_run_at) WHERE next_run_at IS NOT NULL;

CREATE INDEX tasks_finished ON tasks (finished_at) WHERE finished_at IS NOT NULL;

CREATE INDEX tasks_function ON tasks (module, function, id);

CREATE INDEX tasks_lease ON tasks (lease_expires_at, id) WHERE lease_expires_at IS NOT NULL;

CREATE INDEX tasks_owner ON tasks (owner_client_id, id);

CREATE INDEX tasks_parent ON tasks (parent_task_id, id) WHERE parent_task_id IS NOT NULL;

CREATE INDEX tasks_queue ON tasks (owner_client_id, not_before, id) WHERE status = 'queued';

CREATE INDEX tasks_start_deadline ON tasks (start_deadline, id)
	WHERE status = 'queued' AND start_deadline IS NOT NULL;

CREATE INDEX tasks_status ON tasks (status, id);

CREATE UNIQUE INDEX tasks_workflow_open ON tasks (owner_client_id, workflow_id)
	WHERE workflow_id IS NOT NULL AND status IN ('queued', 'loading', 'running', 'cancelling');

CREATE INDEX tasks_workflow_runs ON tasks (owner_client_id, workflow_id, id)
	WHERE workflow_id IS NOT NULL;

CREATE INDEX workflow_waits_due ON workflow_waits (wake_at) WHERE wake_at IS NOT NULL;

