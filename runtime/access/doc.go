// Package access is weft's access control: the clients of the API, their
// scopes and bearer tokens, the admin client made on first start, pairing
// and the Idempotency-Key of mutating requests. A Service keeps all of it in
// a store.Store; the HTTP layer (runtime/httpapi) is its only caller.
//
// # Tokens
//
// A bearer token is TokenPrefix and 32 random bytes, unpadded base64url. Only
// its SHA-256 hash is stored, and the hash is compared in constant time.
// Authenticate reads the client on every call, so a revoked client is
// refused on its very next request. Bootstrap makes the service identity and
// the admin client on first start and writes the admin token to
// DIR/admin.token (mode 0600) before the client exists.
//
// # Scopes
//
// A client holds some of Scopes; ScopeAdmin implies every other one. The
// Service checks no scope itself: the HTTP layer authenticates each request
// through Authenticate and checks the scope its route declares, once, with
// Principal.HasScope. What a caller may see (its own tasks, or every
// client's for an admin) is then passed to the engine as a client id, not as
// a Principal.
//
// # Pairing
//
// PairingCreate makes a single-use code that expires and grants some scopes;
// Pair redeems it for a new client and its token, shown once. Redemptions are
// rate-limited across all callers (Config.PairingRate per minute), so codes
// cannot be guessed.
//
// # Idempotency
//
// IdempotencyBegin claims a client's key for one request, atomically in the
// store, and remembers that a request of this process holds it;
// IdempotencyComplete stores the answer, IdempotencyRelease frees the key
// again, and IdempotencyCompleted notes a key that the engine completed in
// the transaction that created a task or appended a signal. A key bound to a
// committed task and not held by this process belongs to a request that died
// with an earlier process: the first caller after a restart gets its
// Replay.TaskID and answers for that task.
//
// Every error meant for clients carries a fault.Code. The package imports
// store, store/atomicfile and runtime/fault, never runtime: the engine and
// access meet only in the HTTP layer and in cmd/weft, which wires both.
package access
