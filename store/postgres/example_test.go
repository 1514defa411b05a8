package postgres_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/postgres"
)

// Open a store on a database several hosts share, with a smaller pool and
// a tighter statement timeout than the defaults.
func ExampleOpen() {
	ctx := context.Background()
	db, err := postgres.Open(ctx, os.Getenv("WEFT_POSTGRES_DSN"), postgres.Options{
		MaxConns:         4,
		StatementTimeout: 5 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = db.Close(ctx) }()
	claimed, err := db.TaskClaim(ctx, &store.TaskClaimParams{Limit: 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(claimed), "tasks claimed")
}
