// Package metrics holds the Prometheus collectors of weft's engine: what the
// engine observes as it runs tasks (call and write latencies, finished
// tasks) and what a scrape reads from the store at that moment (tasks by
// status, queue depth, the writes waiting to be written again). The HTTP
// layer's request metrics live in runtime/httpapi.
package metrics
