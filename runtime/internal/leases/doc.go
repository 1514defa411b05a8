// Package leases keeps the leases a host holds for the runs in progress on
// it (store.Task.Lease): which task and token each run holds, when the
// lease runs out by this host's clock, and the function that stops the
// run's call. The engine's heartbeat renews what Snapshot lists and calls
// Lose for what the store no longer holds for the host, which stops the
// call; a run whose lease is lost writes nothing more for its task.
package leases
