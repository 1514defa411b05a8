-- The largest memory limit, in bytes, a client's tasks may ask for; 0 means
-- the daemon's default ceiling for clients without the admin scope.
ALTER TABLE clients ADD COLUMN max_memory_limit INTEGER NOT NULL DEFAULT 0;
