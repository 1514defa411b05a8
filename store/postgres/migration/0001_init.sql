-- weft schema for PostgreSQL, version 1 (persistence §11.1): the tables of
-- store/sqlite's migrations 1 to 7 in one step. Times are timestamptz
-- written at millisecond precision (the store truncates before writing);
-- durations are bigint milliseconds; durable values are the codec tag beside
-- the raw single-object frame. Ids and keys use the "C" collation: they
-- sort bytewise, as ULIDs and the store's cursors expect, whatever the
-- database's locale.

-- The service identity and configuration: one row.
CREATE TABLE service_config (
	id                 integer     PRIMARY KEY CHECK (id = 1),
	service_id         text        NOT NULL,
	retention_ms       bigint      NOT NULL,
	idempotency_ttl_ms bigint      NOT NULL,
	created_at         timestamptz NOT NULL,
	updated_at         timestamptz NOT NULL
);

-- Paired clients; only token hashes are stored.
CREATE TABLE clients (
	id               text        COLLATE "C" PRIMARY KEY,
	name             text        NOT NULL,
	token_hash       bytea       NOT NULL UNIQUE,
	scopes           text[]      NOT NULL,
	created_at       timestamptz NOT NULL,
	revoked_at       timestamptz,          -- NULL while active
	max_memory_limit bigint      NOT NULL DEFAULT 0
);

-- Single-use pairing codes, by hash.
CREATE TABLE pairings (
	id         text        COLLATE "C" PRIMARY KEY,
	code_hash  bytea       NOT NULL UNIQUE,
	scopes     text[]      NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	used_at    timestamptz,                -- NULL until redeemed
	client_id  text        COLLATE "C" REFERENCES clients (id)
);

-- Module metadata; the files stay on disk, addressed by digest.
CREATE TABLE modules (
	name       text        COLLATE "C" NOT NULL,
	version    integer     NOT NULL,
	digest     text        NOT NULL,
	size       bigint      NOT NULL,
	functions  jsonb       NOT NULL, -- array of {name, kind}
	created_at timestamptz NOT NULL,
	PRIMARY KEY (name, version)
);

CREATE INDEX modules_digest ON modules (digest);

-- Tasks. The response of a finished task shares its ULID. last_seq is the
-- sequence number of the last event: every append locks the row and takes
-- the next numbers from it, so the log has no gaps.
CREATE TABLE tasks (
	id                  text        COLLATE "C" PRIMARY KEY,
	module              text        NOT NULL,
	module_digest       text        NOT NULL,
	function            text        NOT NULL,
	kind                text        NOT NULL CHECK (kind IN ('activity', 'workflow')),
	input_codec         text,
	input               bytea,
	status              text        NOT NULL CHECK (status IN ('queued', 'loading', 'running', 'cancelling', 'completed', 'failed', 'cancelled')),
	on_restart          text        NOT NULL CHECK (on_restart IN ('fail', 'retry', 'resume')),
	timeout_ms          bigint      NOT NULL,
	retry               jsonb       NOT NULL, -- retry policy, durations in ms
	attempt             integer     NOT NULL,
	checkpoint_codec    text,
	checkpoint          bytea,
	output_codec        text,
	output              bytea,
	error_code          text,
	error_message       text,
	error_type          text,
	error_non_retryable boolean,
	error_details_codec text,
	error_details       bytea,
	owner_client_id     text        COLLATE "C" NOT NULL,
	parent_task_id      text        COLLATE "C",
	not_before          timestamptz NOT NULL,
	created_at          timestamptz NOT NULL,
	updated_at          timestamptz NOT NULL,
	started_at          timestamptz,
	finished_at         timestamptz,          -- set exactly when status is terminal
	last_seq            bigint      NOT NULL,
	memory_limit        bigint      NOT NULL DEFAULT 0,
	progress            jsonb,                -- {done, total, message, updated_at (Unix ms)}, NULL before the first report
	CHECK ((finished_at IS NULL) = (status IN ('queued', 'loading', 'running', 'cancelling')))
);

-- The claim queue: queued tasks per owner, oldest first.
CREATE INDEX tasks_queue ON tasks (owner_client_id, not_before, id) WHERE status = 'queued';
-- Tasks by status: listing, counting, and the leftovers of start-up recovery.
CREATE INDEX tasks_status ON tasks (status, id);
-- Finished tasks by age, for retention.
CREATE INDEX tasks_finished ON tasks (finished_at, id) WHERE finished_at IS NOT NULL;
-- A client's tasks, a workflow's child tasks, listings by function.
CREATE INDEX tasks_owner ON tasks (owner_client_id, id);
CREATE INDEX tasks_parent ON tasks (parent_task_id, id) WHERE parent_task_id IS NOT NULL;
CREATE INDEX tasks_function ON tasks (module, function, id);

-- The event log of every task; sequence numbers start at 0 with no gaps.
CREATE TABLE task_events (
	task_id    text        COLLATE "C" NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
	seq        bigint      NOT NULL,
	type       text        NOT NULL,
	payload    json        NOT NULL, -- kept as written
	created_at timestamptz NOT NULL,
	PRIMARY KEY (task_id, seq)
);

-- Responses of finished tasks. A response's id is its task's ULID under the
-- "resp_" prefix; output and error live on the task row.
CREATE TABLE responses (
	task_id     text        COLLATE "C" PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	status      text        NOT NULL CHECK (status IN ('completed', 'failed', 'cancelled')),
	created_at  timestamptz NOT NULL,
	finished_at timestamptz NOT NULL
);

-- Idempotency keys per client, with the stored result of their request.
-- task_id is the task an in-flight key's request created, '' for none.
CREATE TABLE idempotency_keys (
	client_id      text        COLLATE "C" NOT NULL,
	key            text        COLLATE "C" NOT NULL,
	request_digest bytea       NOT NULL,
	state          text        NOT NULL CHECK (state IN ('in_flight', 'done')),
	status_code    integer,
	body           bytea,
	created_at     timestamptz NOT NULL,
	expires_at     timestamptz NOT NULL,
	task_id        text        COLLATE "C" NOT NULL DEFAULT '',
	PRIMARY KEY (client_id, key)
);

CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- Waiting workflows (docs/workflows.md): a workflow that waits stays
-- running and holds no worker; its row says when it falls due.
CREATE TABLE workflow_waits (
	task_id text        COLLATE "C" PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
	attempt integer     NOT NULL, -- the task's attempt when it began to wait; a row of an older attempt is stale
	wake_at timestamptz           -- when it falls due; NULL until an event wakes it
);

-- The due queue: only rows with a wake time, earliest first.
CREATE INDEX workflow_waits_due ON workflow_waits (wake_at, task_id) WHERE wake_at IS NOT NULL;
