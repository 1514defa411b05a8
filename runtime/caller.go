package runtime

// Caller is whose objects an engine call may see: those of one client, or,
// with All, every client's. It decides visibility only; the HTTP layer has
// checked the caller's scopes before the call (package runtime/access), and
// the engine checks none.
type Caller struct {
	// ClientID is the calling client.
	ClientID string
	// All lets the call see every client's tasks and responses: a caller
	// with the admin scope.
	All bool
}

// sees reports whether c may see an object owned by clientID: its own
// objects, and everything with All.
func (c Caller) sees(clientID string) bool { return c.All || c.ClientID == clientID }
