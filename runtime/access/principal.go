package access

import "slices"

// The scopes a client can hold (BRIEF §3.3). Admin implies every other
// scope.
const (
	ScopeAdmin        = "admin"
	ScopeModulesRead  = "modules:read"
	ScopeModulesWrite = "modules:write"
	ScopeTasksRead    = "tasks:read"
	ScopeTasksWrite   = "tasks:write"
)

// Scopes lists every scope.
var Scopes = []string{ScopeAdmin, ScopeModulesRead, ScopeModulesWrite, ScopeTasksRead, ScopeTasksWrite}

// Principal is an authenticated client: who is calling, and with which
// scopes.
type Principal struct {
	// ClientID is the client's id.
	ClientID string
	// Name is the client's name.
	Name string
	// Scopes are the client's scopes.
	Scopes []string
	// MaxMemoryLimit is the client's own ceiling on the memory limits of
	// its tasks; zero means the engine's default.
	MaxMemoryLimit int64
}

// IsAdmin reports whether p holds the admin scope, and so may see every
// client's tasks. A nil Principal is not an admin.
func (p *Principal) IsAdmin() bool { return p != nil && slices.Contains(p.Scopes, ScopeAdmin) }

// HasScope reports whether p holds scope; admin implies every scope. A nil
// Principal holds none.
func (p *Principal) HasScope(scope string) bool {
	return p != nil && (slices.Contains(p.Scopes, scope) || slices.Contains(p.Scopes, ScopeAdmin))
}
