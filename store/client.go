package store

import "time"

// Client is a paired client (persistence §11.1: clients). Only the hash of
// its token is stored.
type Client struct {
	// ID is "cli_" followed by a ULID.
	ID string
	// Name is the client's display name.
	Name string
	// TokenHash is the SHA-256 hash of the bearer token.
	TokenHash []byte
	// Scopes are the scopes granted, such as admin or tasks:write.
	Scopes []string
	// CreatedAt is when the client was created.
	// Millisecond precision, UTC.
	CreatedAt time.Time
	// RevokedAt is when the client was revoked; zero while active.
	// Millisecond precision, UTC.
	RevokedAt time.Time
	// MaxMemoryLimit is the largest memory limit, in bytes, the client's
	// tasks may ask for; zero means the daemon's default ceiling.
	MaxMemoryLimit int64
}

// ClientUpdateParams are the params of Store.ClientUpdate.
type ClientUpdateParams struct {
	// ID is the client. Required.
	ID string
	// MaxMemoryLimit replaces the client's ceiling on memory limits, when
	// set; zero restores the daemon's default. Defaults to nil (unchanged).
	MaxMemoryLimit *int64
}

// Revoked reports whether the client was revoked.
func (c *Client) Revoked() bool { return !c.RevokedAt.IsZero() }

// ClientInsertParams are the params of Store.ClientInsert.
type ClientInsertParams struct {
	// Name is the display name. Required.
	Name string
	// TokenHash is the SHA-256 hash of the token. Required, unique.
	TokenHash []byte
	// Scopes are the scopes granted. Defaults to none.
	Scopes []string
}

// Pairing is a single-use pairing code, stored by its hash.
type Pairing struct {
	// ID is "pair_" followed by a ULID.
	ID string
	// CodeHash is the SHA-256 hash of the code.
	CodeHash []byte
	// Scopes are the scopes the redeeming client gets.
	Scopes []string
	// CreatedAt is when the code was made.
	// Millisecond precision, UTC.
	CreatedAt time.Time
	// ExpiresAt is when the code stops working.
	// Millisecond precision, UTC.
	ExpiresAt time.Time
	// UsedAt is when the code was redeemed; zero before.
	// Millisecond precision, UTC.
	UsedAt time.Time
	// ClientID is the client created by the redemption, or "".
	ClientID string
}

// PairingInsertParams are the params of Store.PairingInsert.
type PairingInsertParams struct {
	// CodeHash is the SHA-256 hash of the code. Required, unique.
	CodeHash []byte
	// Scopes are the scopes to grant. Defaults to none.
	Scopes []string
	// ExpiresAt is when the code stops working; stored truncated to the
	// millisecond, in UTC. Required.
	ExpiresAt time.Time
}

// PairingRedeemParams are the params of Store.PairingRedeem.
type PairingRedeemParams struct {
	// CodeHash is the SHA-256 hash of the code presented. Required.
	CodeHash []byte
	// ClientName names the new client. Required.
	ClientName string
	// TokenHash is the SHA-256 hash of the new client's token. Required.
	TokenHash []byte
	// Now is compared with the expiry. Defaults to the current time.
	Now time.Time
}
