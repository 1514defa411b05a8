// Package workflowcases holds the workflow cases of the store conformance
// suite, which storetest.Run runs: child tasks journaled on their parent,
// waiting workflows and their claim, the hand-off of a woken parent, and a
// child's end folded into its parent's commit.
package workflowcases
