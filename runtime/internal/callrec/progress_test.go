package callrec

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/store/storetest"
)

// BenchmarkProgressReport measures what one progress report costs the
// plugin call while the throttled writer appends to a real store.
func BenchmarkProgressReport(b *testing.B) {
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "weft.db"), Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close(context.Background()) })
	task := storetest.MustRunning(b, db, nil)
	l := NewProgress(db, 250*time.Millisecond, hclog.NewNullLogger())
	l.Begin(task.ID, 0)
	b.ReportAllocs()
	for i := int64(0); b.Loop(); i++ {
		l.Report(i, 0, "copying")
	}
	b.StopTimer()
	l.End(context.Background())
}
