// Package loadbench is weft's load benchmark, the measurement behind `weft
// bench load`: it starts a daemon in this process on a temporary data
// directory (package daemon, as `weft serve` runs it) or uses a running one,
// deploys the testkit plugin, submits background echo tasks from concurrent
// HTTP clients (package client), and waits until all have finished, watching
// the daemon's Prometheus counters. Its Report says tasks per second from
// the first submit to the last completion, submit latency percentiles, lost
// tasks (acknowledged with 202 but missing), the store's group commits, and
// the disk's fsync latency before and after (an fsync probe). A run can
// capture a CPU profile and an execution trace of its measured phase.
//
// It is kept apart from the CLI, as River keeps riverbench, so that the Go
// benchmarks (here and in cmd/compare, which sets weft beside River on the
// same work) measure exactly what the command reports.
package loadbench
