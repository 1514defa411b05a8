COLUMN clients.id text COLLATE C NOT NULL
COLUMN clients.name text NOT NULL
COLUMN clients.token_hash bytea NOT NULL
COLUMN clients.scopes text[] NOT NULL
COLUMN clients.created_at timestamp with time zone NOT NULL
COLUMN clients.revoked_at timestamp with time zone
COLUMN clients.max_memory_limit bigint NOT NULL DEFAULT 0
COLUMN idempotency_keys.client_id text COLLATE C NOT NULL
COLUMN idempotency_keys.key text COLLATE C NOT NULL
COLUMN idempotency_keys.request_digest bytea NOT NULL
COLUMN idempotency_keys.state text NOT NULL
COLUMN idempotency_keys.status_code integer
COLUMN idempotency_keys.body bytea
COLUMN idempotency_keys.created_at timestamp with time zone NOT NULL
COLUMN idempotency_keys.expires_at timestamp with time zone NOT NULL
COLUMN idempotency_keys.task_id text COLLATE C NOT NULL DEFAULT ''::text
COLUMN modules.name text COLLATE C NOT NULL
COLUMN modules.version integer NOT NULL
COLUMN modules.digest text NOT NULL
COLUMN modules.size bigint NOT NULL
COLUMN modules.functions jsonb NOT NULL
COLUMN modules.created_at timestamp with time zone NOT NULL
COLUMN pairings.id text COLLATE C NOT NULL
COLUMN pairings.code_hash bytea NOT NULL
COLUMN pairings.scopes text[] NOT NULL
COLUMN pairings.created_at timestamp with time zone NOT NULL
COLUMN pairings.expires_at timestamp with time zone NOT NULL
COLUMN pairings.used_at timestamp with time zone
COLUMN pairings.client_id text COLLATE C
COLUMN responses.task_id text COLLATE C NOT NULL
COLUMN responses.status text NOT NULL
COLUMN responses.created_at timestamp with time zone NOT NULL
COLUMN responses.finished_at timestamp with time zone NOT NULL
COLUMN schedule_runs.owner_client_id text NOT NULL
COLUMN schedule_runs.schedule_id text NOT NULL
COLUMN schedule_runs.run_key text NOT NULL
COLUMN schedule_runs.tick_at timestamp with time zone NOT NULL
COLUMN schedule_runs.started_at timestamp with time zone NOT NULL
COLUMN schedule_runs.task_id text NOT NULL
COLUMN schedules.owner_client_id text NOT NULL
COLUMN schedules.id text NOT NULL
COLUMN schedules.definition text NOT NULL
COLUMN schedules.paused boolean NOT NULL DEFAULT false
COLUMN schedules.note text NOT NULL DEFAULT ''::text
COLUMN schedules.last_tick_at timestamp with time zone NOT NULL
COLUMN schedules.next_run_at timestamp with time zone
COLUMN schedules.buffered text NOT NULL DEFAULT ''::text
COLUMN schedules.missed bigint NOT NULL DEFAULT 0
COLUMN schedules.skipped bigint NOT NULL DEFAULT 0
COLUMN schedules.version bigint NOT NULL DEFAULT 1
COLUMN schedules.created_at timestamp with time zone NOT NULL
COLUMN schedules.updated_at timestamp with time zone NOT NULL
COLUMN schema_migrations.version integer NOT NULL
COLUMN schema_migrations.name text NOT NULL
COLUMN schema_migrations.applied_at timestamp with time zone NOT NULL
COLUMN service_config.id integer NOT NULL
COLUMN service_config.service_id text NOT NULL
COLUMN service_config.retention_ms bigint NOT NULL
COLUMN service_config.idempotency_ttl_ms bigint NOT NULL
COLUMN service_config.created_at timestamp with time zone NOT NULL
COLUMN service_config.updated_at timestamp with time zone NOT NULL
COLUMN task_events.task_id text COLLATE C NOT NULL
COLUMN task_events.seq bigint NOT NULL
COLUMN task_events.type text NOT NULL
COLUMN task_events.payload json NOT NULL
COLUMN task_events.created_at timestamp with time zone NOT NULL
COLUMN tasks.id text COLLATE C NOT NULL
COLUMN tasks.module text NOT NULL
COLUMN tasks.module_digest text NOT NULL
COLUMN tasks.function text NOT NULL
COLUMN tasks.kind text NOT NULL
COLUMN tasks.input_codec text
COLUMN tasks.input bytea
COLUMN tasks.status text NOT NULL
COLUMN tasks.on_restart text NOT NULL
COLUMN tasks.timeout_ms bigint NOT NULL
COLUMN tasks.retry jsonb NOT NULL
COLUMN tasks.attempt integer NOT NULL
COLUMN tasks.checkpoint_codec text
COLUMN tasks.checkpoint bytea
COLUMN tasks.output_codec text
COLUMN tasks.output bytea
COLUMN tasks.error_code text
COLUMN tasks.error_message text
COLUMN tasks.error_type text
COLUMN tasks.error_non_retryable boolean
COLUMN tasks.error_details_codec text
COLUMN tasks.error_details bytea
COLUMN tasks.owner_client_id text COLLATE C NOT NULL
COLUMN tasks.parent_task_id text COLLATE C
COLUMN tasks.not_before timestamp with time zone NOT NULL
COLUMN tasks.created_at timestamp with time zone NOT NULL
COLUMN tasks.updated_at timestamp with time zone NOT NULL
COLUMN tasks.started_at timestamp with time zone
COLUMN tasks.finished_at timestamp with time zone
COLUMN tasks.last_seq bigint NOT NULL
COLUMN tasks.memory_limit bigint NOT NULL DEFAULT 0
COLUMN tasks.progress jsonb
COLUMN tasks.lease_host text NOT NULL DEFAULT ''::text
COLUMN tasks.lease_token bigint NOT NULL DEFAULT 0
COLUMN tasks.lease_expires_at timestamp with time zone
COLUMN tasks.deadline timestamp with time zone
COLUMN tasks.run_timeout_ms bigint NOT NULL DEFAULT 0
COLUMN tasks.run_deadline timestamp with time zone
COLUMN tasks.schedule_to_start_ms bigint NOT NULL DEFAULT 0
COLUMN tasks.start_deadline timestamp with time zone
COLUMN tasks.heartbeat_timeout_ms bigint NOT NULL DEFAULT 0
COLUMN tasks.workflow_id text
COLUMN tasks.continued_from text
COLUMN tasks.parent_close_policy text
COLUMN tasks.cancel_requested_at timestamp with time zone
COLUMN workflow_waits.task_id text COLLATE C NOT NULL
COLUMN workflow_waits.attempt integer NOT NULL
COLUMN workflow_waits.wake_at timestamp with time zone

CONSTRAINT clients_pkey ON clients PRIMARY KEY (id)
CONSTRAINT clients_token_hash_key ON clients UNIQUE (token_hash)
CONSTRAINT idempotency_keys_pkey ON idempotency_keys PRIMARY KEY (client_id, key)
CONSTRAINT idempotency_keys_state_check ON idempotency_keys CHECK ((state = ANY (ARRAY['in_flight'::text, 'done'::text])))
CONSTRAINT modules_pkey ON modules PRIMARY KEY (name, version)
CONSTRAINT pairings_client_id_fkey ON pairings FOREIGN KEY (client_id) REFERENCES clients(id)
CONSTRAINT pairings_code_hash_key ON pairings UNIQUE (code_hash)
CONSTRAINT pairings_pkey ON pairings PRIMARY KEY (id)
CONSTRAINT responses_pkey ON responses PRIMARY KEY (task_id)
CONSTRAINT responses_status_check ON responses CHECK ((status = ANY (ARRAY['completed'::text, 'failed'::text, 'cancelled'::text])))
CONSTRAINT responses_task_id_fkey ON responses FOREIGN KEY (task_id) REFERENCES tasks(id) ON DELETE CASCADE
CONSTRAINT schedule_runs_pkey ON schedule_runs PRIMARY KEY (owner_client_id, schedule_id, run_key)
CONSTRAINT schedules_pkey ON schedules PRIMARY KEY (owner_client_id, id)
CONSTRAINT schema_migrations_pkey ON schema_migrations PRIMARY KEY (version)
CONSTRAINT service_config_id_check ON service_config CHECK ((id = 1))
CONSTRAINT service_config_pkey ON service_config PRIMARY KEY (id)
CONSTRAINT task_events_pkey ON task_events PRIMARY KEY (task_id, seq)
CONSTRAINT task_events_task_id_fkey ON task_events FOREIGN KEY (task_id) REFERENCES tasks(id) ON DELETE CASCADE
CONSTRAINT tasks_check ON tasks CHECK (((finished_at IS NULL) = (status = ANY (ARRAY['queued'::text, 'loading'::text, 'running'::text, 'cancelling'::text]))))
CONSTRAINT tasks_kind_check ON tasks CHECK ((kind = ANY (ARRAY['activity'::text, 'workflow'::text])))
CONSTRAINT tasks_on_restart_check ON tasks CHECK ((on_restart = ANY (ARRAY['fail'::text, 'retry'::text, 'resume'::text])))
CONSTRAINT tasks_pkey ON tasks PRIMARY KEY (id)
CONSTRAINT tasks_status_check ON tasks CHECK ((status = ANY (ARRAY['queued'::text, 'loading'::text, 'running'::text, 'cancelling'::text, 'completed'::text, 'failed'::text, 'cancelled'::text])))
CONSTRAINT workflow_waits_pkey ON workflow_waits PRIMARY KEY (task_id)
CONSTRAINT workflow_waits_task_id_fkey ON workflow_waits FOREIGN KEY (task_id) REFERENCES tasks(id) ON DELETE CASCADE

CREATE UNIQUE INDEX clients_pkey ON clients USING btree (id)
CREATE UNIQUE INDEX clients_token_hash_key ON clients USING btree (token_hash)
CREATE INDEX idempotency_keys_expiry ON idempotency_keys USING btree (expires_at)
CREATE UNIQUE INDEX idempotency_keys_pkey ON idempotency_keys USING btree (client_id, key)
CREATE INDEX modules_digest ON modules USING btree (digest)
CREATE UNIQUE INDEX modules_pkey ON modules USING btree (name, version)
CREATE UNIQUE INDEX pairings_code_hash_key ON pairings USING btree (code_hash)
CREATE UNIQUE INDEX pairings_pkey ON pairings USING btree (id)
CREATE UNIQUE INDEX responses_pkey ON responses USING btree (task_id)
CREATE INDEX schedule_runs_latest ON schedule_runs USING btree (owner_client_id, schedule_id, started_at)
CREATE UNIQUE INDEX schedule_runs_pkey ON schedule_runs USING btree (owner_client_id, schedule_id, run_key)
CREATE INDEX schedules_due ON schedules USING btree (next_run_at) WHERE (next_run_at IS NOT NULL)
CREATE UNIQUE INDEX schedules_pkey ON schedules USING btree (owner_client_id, id)
CREATE UNIQUE INDEX schema_migrations_pkey ON schema_migrations USING btree (version)
CREATE UNIQUE INDEX service_config_pkey ON service_config USING btree (id)
CREATE UNIQUE INDEX task_events_pkey ON task_events USING btree (task_id, seq)
CREATE INDEX tasks_finished ON tasks USING btree (finished_at, id) WHERE (finished_at IS NOT NULL)
CREATE INDEX tasks_function ON tasks USING btree (module, function, id)
CREATE INDEX tasks_lease ON tasks USING btree (lease_expires_at, id) WHERE (lease_expires_at IS NOT NULL)
CREATE INDEX tasks_owner ON tasks USING btree (owner_client_id, id)
CREATE INDEX tasks_parent ON tasks USING btree (parent_task_id, id) WHERE (parent_task_id IS NOT NULL)
CREATE UNIQUE INDEX tasks_pkey ON tasks USING btree (id)
CREATE INDEX tasks_queue ON tasks USING btree (owner_client_id, not_before, id) WHERE (status = 'queued'::text)
CREATE INDEX tasks_start_deadline ON tasks USING btree (start_deadline, id) WHERE ((status = 'queued'::text) AND (start_deadline IS NOT NULL))
CREATE INDEX tasks_status ON tasks USING btree (status, id)
CREATE UNIQUE INDEX tasks_workflow_open ON tasks USING btree (owner_client_id, workflow_id) WHERE ((workflow_id IS NOT NULL) AND (status = ANY (ARRAY['queued'::text, 'loading'::text, 'running'::text, 'cancelling'::text])))
CREATE INDEX tasks_workflow_runs ON tasks USING btree (owner_client_id, workflow_id, id) WHERE (workflow_id IS NOT NULL)
CREATE INDEX workflow_waits_due ON workflow_waits USING btree (wake_at, task_id) WHERE (wake_at IS NOT NULL)
CREATE UNIQUE INDEX workflow_waits_pkey ON workflow_waits USING btree (task_id)
