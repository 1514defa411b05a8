// Package callrec records what a running plugin call reports besides its
// outcome: its log lines (Log, bounded to MaxLogEvents task.log events per
// call and appended in batches as the call goes) and its progress
// (Progress, throttled to one task.progress event per interval and appended
// by a goroutine of its own, so the call never waits for the store). A
// worker owns one of each and uses it for one call at a time.
package callrec
