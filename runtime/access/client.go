package access

import (
	"context"
	"errors"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/store"
)

// ClientList returns every client, oldest first, revoked ones included.
func (s *Service) ClientList(ctx context.Context) ([]*store.Client, error) {
	cs, err := s.store.ClientList(ctx)
	if err != nil {
		return nil, fault.Wrap("list clients", err)
	}
	return cs, nil
}

// ClientGet returns a client, or fault.NotFound for an unknown id.
func (s *Service) ClientGet(ctx context.Context, id string) (*store.Client, error) {
	c, err := s.store.ClientGet(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "client %q not found", id)
	case err != nil:
		return nil, fault.Wrap("get client", err)
	}
	return c, nil
}

// ClientRevoke revokes a client at once: its token fails from the next
// request on. Revoking twice keeps the first time. It returns
// fault.NotFound for an unknown id.
func (s *Service) ClientRevoke(ctx context.Context, id string) (*store.Client, error) {
	c, err := s.store.ClientRevoke(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "client %q not found", id)
	case err != nil:
		return nil, fault.Wrap("revoke client", err)
	}
	s.log.Info("client revoked", "client_id", id)
	return c, nil
}

// ClientUpdateParams are the params of Service.ClientUpdate.
type ClientUpdateParams struct {
	// MaxMemoryLimit sets the client's ceiling on memory_limit_bytes, at
	// most Config.MaxMemoryLimit; zero restores the daemon's default.
	// Defaults to nil (unchanged).
	MaxMemoryLimit *int64
}

// ClientUpdate changes a client's settings: its ceiling on the memory
// limits of its tasks. It returns fault.NotFound for an unknown id and
// fault.Invalid (param max_memory_limit_bytes) for a limit out of range.
func (s *Service) ClientUpdate(ctx context.Context, id string, p *ClientUpdateParams) (*store.Client, error) {
	if m := p.MaxMemoryLimit; m != nil && (*m < 0 || *m > s.cfg.MaxMemoryLimit) {
		return nil, fault.ParamErrorf("max_memory_limit_bytes", "max_memory_limit_bytes must be between 0 and %d", s.cfg.MaxMemoryLimit)
	}
	c, err := s.store.ClientUpdate(ctx, &store.ClientUpdateParams{ID: id, MaxMemoryLimit: p.MaxMemoryLimit})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, fault.Errorf(fault.NotFound, "client %q not found", id)
	case err != nil:
		return nil, fault.Wrap("update client", err)
	}
	s.log.Info("client updated", "client_id", id, "max_memory_limit", c.MaxMemoryLimit)
	return c, nil
}
