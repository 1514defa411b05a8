// Package check holds the helpers of the store conformance suite that its
// sub-suites share: test defaults for inserting tasks, moves through the
// state machine, and the invariants of a task's log. Package storetest
// exports them to backend tests under the same names.
package check
