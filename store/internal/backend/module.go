package backend

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/weft-run/weft/store"
)

// ModuleFunctions returns the functions ModuleInsert with p records ([]
// for none) and their stored form, a JSON array.
func ModuleFunctions(p *store.ModuleInsertParams) ([]store.Function, string, error) {
	fns := p.Functions
	if fns == nil {
		fns = []store.Function{}
	}
	b, err := json.Marshal(fns)
	return fns, string(b), err
}

// UnmarshalFunctions reads the stored functions of module m into it.
func UnmarshalFunctions(m *store.Module, fns string) error {
	if err := json.Unmarshal([]byte(fns), &m.Functions); err != nil {
		return fmt.Errorf("module %s functions: %w", m.Name, err)
	}
	return nil
}

// NextModule returns the version ModuleInsert with p, recording fns,
// writes at n after latest (nil when the name has none), and false when
// p deploys the bytes of latest again: then it returns latest, and
// nothing is written.
func NextModule(latest *store.Module, p *store.ModuleInsertParams, fns []store.Function, n time.Time) (*store.Module, bool) {
	if latest != nil && latest.Digest == p.Digest {
		return latest, false
	}
	m := &store.Module{Name: p.Name, Version: 1, Digest: p.Digest, Size: p.Size, Functions: fns, CreatedAt: n}
	if latest != nil {
		m.Version = latest.Version + 1
	}
	return m, true
}
