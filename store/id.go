package store

import (
	"fmt"
	"strings"

	"github.com/oklog/ulid/v2"
)

// The id prefixes. An id is a prefix and a ULID, so ids sort by creation
// time.
const (
	TaskIDPrefix     = "task_"
	ResponseIDPrefix = "resp_"
	ClientIDPrefix   = "cli_"
	PairingIDPrefix  = "pair_"
	ServiceIDPrefix  = "svc_"
)

// NewID returns a new id with the given prefix and a fresh ULID. It is safe
// for concurrent use; ids made by one process are strictly increasing.
func NewID(prefix string) string { return prefix + ulid.Make().String() }

// ResponseIDFor returns the id of the response of the task taskID: the same
// ULID under the response prefix.
func ResponseIDFor(taskID string) string {
	return ResponseIDPrefix + strings.TrimPrefix(taskID, TaskIDPrefix)
}

// TaskIDFor returns the id of the task of the response responseID.
func TaskIDFor(responseID string) string {
	return TaskIDPrefix + strings.TrimPrefix(responseID, ResponseIDPrefix)
}

// CheckID returns an ErrInvalid error unless id is prefix followed by a
// valid ULID.
func CheckID(prefix, id string) error {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return fmt.Errorf("%w: id %q lacks prefix %q", ErrInvalid, id, prefix)
	}
	if _, err := ulid.ParseStrict(rest); err != nil {
		return fmt.Errorf("%w: id %q: %v", ErrInvalid, id, err)
	}
	return nil
}
