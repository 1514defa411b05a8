// Package fault holds the API-visible error codes of weft's engine and the
// error type that carries them. The engine (runtime), the journal, access
// control and the HTTP layer all return errors through it; only
// runtime/httpapi maps a code to an HTTP status.
//
// A client matches on the Code, a stable snake_case string (house style rule
// 10); CodeOf finds the code of any error (codec errors, context errors and
// store.ErrNotFound included) and Message gives the text that is safe to
// show, never a path, SQL or a stack.
package fault
