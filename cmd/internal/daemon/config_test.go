package daemon

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseFlagsStore(t *testing.T) {
	t.Setenv(EnvStore, "")
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string // error substring; "" for none
	}{
		{name: "SQLiteDefault", args: nil},
		{name: "Postgres", args: []string{"--store", "postgres://weft@db:5432/weft?sslmode=disable"}},
		{name: "PostgresqlScheme", args: []string{"--store", "postgresql://weft@db/weft"}},
		{name: "NotAURLOfPostgres", args: []string{"--store", "mysql://weft@db/weft"}, want: "--store must be a PostgreSQL URL"},
		{name: "SQLitePath", args: []string{"--store", "/var/lib/weft/weft.db"}, want: "--store must be a PostgreSQL URL"},
		{name: "BadPort", args: []string{"--store", "postgres://weft@db:port/weft"}, want: "--store: "},
		{name: "BadSSLMode", args: []string{"--store", "postgres://weft@db/weft?sslmode=maybe"}, want: "--store: "},
		{name: "FromEnv", env: "postgres://weft@db/weft"},
		{name: "BadEnv", env: "weft.db", want: "--store must be a PostgreSQL URL"},
		{name: "FlagOverridesEnv", args: []string{"--store", ""}, env: "weft.db"},
		{name: "MaxConns", args: []string{"--store", "postgres://weft@db/weft", "--store-max-conns", "40"}},
		{name: "MaxConnsZero", args: []string{"--store", "postgres://weft@db/weft", "--store-max-conns", "0"}, want: "--store-max-conns must be between 1"},
		{name: "MaxConnsWithoutStore", args: []string{"--store-max-conns", "40"}, want: "applies to a PostgreSQL --store only"},
		{name: "HostID", args: []string{"--host-id", "weft-1.eu:7700"}},
		{name: "BadHostID", args: []string{"--host-id", "-weft"}, want: `--host-id "-weft"`},
		{name: "HostIDWithSpace", args: []string{"--host-id", "weft 1"}, want: "--host-id"},
		{name: "LeaseTTL", args: []string{"--lease-ttl", "3s"}},
		{name: "LeaseTTLTooShort", args: []string{"--lease-ttl", "500ms"}, want: "--lease-ttl must be at least 1s"},
		{name: "LeaseTTLNegative", args: []string{"--lease-ttl", "-1s"}, want: "--lease-ttl must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvStore, tc.env)
			cfg, err := ParseFlags(tc.args)
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			if tc.env != "" && len(tc.args) == 0 {
				require.Equal(t, tc.env, cfg.Store)
			}
		})
	}

	cfg, err := ParseFlags([]string{"--store", "postgres://weft@db/weft", "--host-id", "a1", "--lease-ttl", "3s"})
	require.NoError(t, err)
	require.Equal(t, DefaultStoreMaxConns, cfg.StoreMaxConns)
	require.Equal(t, "a1", cfg.HostID)
	require.Equal(t, 3*time.Second, cfg.LeaseTTL)
}
