package store

import "encoding/json"

// ScannedPayload is one stored durable value, or one stored JSON document
// that may hold envelopes, as Store.PayloadScan reports it.
type ScannedPayload struct {
	// Table is the table (tasks, task_events, idempotency_keys).
	Table string
	// Row identifies the row: a task id, "task_id#seq" for an event,
	// "client_id/key" for an idempotency key.
	Row string
	// Field is the column, such as input or checkpoint.
	Field string
	// Payload is a durable value column, codec tag and frame as stored. It
	// is the zero Payload when Document is set.
	Payload Payload
	// Document is a JSON document column (event payloads, stored response
	// bodies). Durable values inside it are envelopes under keys ending in
	// "_envelope". Nil when Payload is set.
	Document json.RawMessage
}
