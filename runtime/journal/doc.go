// Package journal is the workflow journal of weft: the vocabulary of the
// events a workflow task's log records about its runs, the replay state
// built from them, and the replay machine that answers a workflow guest's
// commands from that state (docs/workflows.md).
//
// # Events
//
// Each journal event type has its Go type and its type name constant, one
// file per family: activity.scheduled, activity.completed and
// activity.failed (ActivityScheduled, ActivityCompleted, ActivityFailed);
// timer.started and timer.fired; signal.waiting, signal.received and
// signal.timed_out. Encode turns a payload into the draft of an event to
// append; Decode reads one back. The JSON is what the engine has always
// stored, byte for byte, so existing logs replay. Decode has a fast path
// that reads the common shapes of a payload without reflection, since a
// replay decodes every event of a journal; anything rarer goes through
// encoding/json, with the same result.
//
// # Replay state
//
// A Journal is the state of one workflow attempt: the commands its runs
// recorded (step n is future id n), how and in which order their futures
// resolved, the pending signal waits, the signals no wait consumed and the
// log lines the runs logged. Journal.Apply folds one event of the log into
// it and touches nothing else, so the state of any log is a list of events
// applied in sequence order; Read builds it from a store and Cache keeps
// the journals of waiting workflows between their runs. Signals counts the
// signals each workflow holds for later, for the engine to bound them.
//
// # The replay machine
//
// A Replay is the WorkflowHost of one run: a command the journal recorded
// at the same step is answered from it, a different one is a
// *NondeterminismError, and a new one is recorded (Events) and, for an
// activity, becomes a child task to insert (Children). In Record mode it
// also fires the timers and signal timeouts that fell due; in Check mode
// (deploy --check-replay) it records nothing. It needs only the task, the
// run's time and a DigestFunc for the activities of other modules: the
// engine commits what it recorded with the workflow's next state, wakes the
// workflow and runs its activities.
//
// The package never imports the engine (package runtime), which uses it.
package journal
