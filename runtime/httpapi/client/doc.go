// Package client is a Go client of weft's HTTP JSON API, and the home of the
// API's documents: the server in package httpapi writes these very types, so
// the shapes a program reads cannot drift from the ones the daemon sends.
//
// The package imports the standard library and package codec only (no
// engine, no wasm runtime, no SQLite), so a program that talks to a daemon
// stays small.
//
// # Usage
//
//	c, err := client.New(client.Config{BaseURL: "http://127.0.0.1:7700", Token: token})
//	if err != nil {
//		return err
//	}
//	env, err := codec.EncodeEnvelope(codec.String("world"))
//	if err != nil {
//		return err
//	}
//	task, err := c.TaskCreate(ctx, &client.TaskRequest{Module: "hello", Function: "greet", Input: client.InputOf(env)})
//	if err != nil {
//		return err
//	}
//	err = c.EventStream(ctx, task.ID, client.EventStreamParams{}, func(ev *client.StreamEvent) (bool, error) {
//		return client.IsTerminalEvent(ev.Type), nil
//	})
//
// # Errors
//
// A request the daemon refuses returns an *Error carrying the HTTP status
// and the API's error code (invalid_request, not_found, insufficient_scope,
// …; docs/http-api.md lists them). An answer larger than
// Config.MaxResponseBytes is ErrResponseTooLarge; an answer that is not the
// JSON document it should be is a *DecodeError.
//
// # Idempotency
//
// WithIdempotencyKey attaches an Idempotency-Key to the creating calls made
// with the returned context: the daemon answers a retry of the same request
// with the same key with the first answer, and the same key on another
// request with an *Error of code idempotency_key_reused.
package client
