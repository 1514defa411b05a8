-- Listings filtered by module and function (GET /v1/tasks?module=&function=)
-- walk this index newest first instead of the whole table.
CREATE INDEX tasks_function ON tasks (module, function, id);
