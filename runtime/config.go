package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/weft-run/weft/runtime/fault"
	"github.com/weft-run/weft/runtime/internal/retry"
	"github.com/weft-run/weft/runtime/metrics"
	"github.com/weft-run/weft/runtime/modules"
	"github.com/weft-run/weft/store"
)

// Config configures an Engine. The zero value of every optional field means
// its default; New fills the defaults into a private copy and never changes
// it afterwards.
type Config struct {
	// Store is where every task, event, client and key lives. Required.
	Store store.Store
	// Executor runs plugin functions (the wazero host, adapted by the
	// daemon). Required.
	Executor Executor
	// Modules holds the module files, content-addressed by digest.
	// Required.
	Modules modules.Files
	// Logger receives the engine's logs, named "runtime". Defaults to a null
	// logger.
	Logger hclog.Logger
	// Metrics receives the engine's measurements; see metrics.New. Defaults to
	// nil (no metrics).
	Metrics *metrics.Metrics

	// Workers is the number of tasks run at once. Tasks mostly wait on
	// durable commits, and more tasks in flight mean more writes per group
	// commit, so this is well above the number of cores; CPU-bound plugins
	// are bounded by the Executor. Defaults to 128.
	Workers int
	// PollInterval is the safety net of the scheduler: when idle, it looks
	// for claimable tasks at least this often even without a wake-up. Task
	// creation, retries and signals wake it directly, so this is not the
	// path that starts tasks. Defaults to 5s.
	PollInterval time.Duration
	// ShutdownTimeout bounds Close when its context has no earlier
	// deadline. Defaults to 10s.
	ShutdownTimeout time.Duration

	// Retention is how long finished tasks are kept, with their events and
	// responses (persistence §11.2). Defaults to the period stored in the
	// service configuration (7 days unless changed).
	Retention time.Duration
	// RetentionInterval is the time between two runs of the retention
	// loop. Defaults to 1 minute.
	RetentionInterval time.Duration
	// RetentionBatch caps the rows one retention transaction deletes, so the
	// loop never holds the writer for long. Defaults to 500.
	RetentionBatch int

	// DefaultRetry is the retry policy of an activity task created without
	// one (a workflow task runs once unless it names a policy). Defaults to
	// DefaultActivityRetry.
	DefaultRetry *store.RetryPolicy

	// StoreRetry bounds the task writes kept in memory, and written again,
	// when the store refuses them; see StoreRetry for the defaults.
	StoreRetry StoreRetry

	// ClientWorkers caps the workers one client's tasks hold at once, so
	// that a newcomer always finds a worker free; below it, a client takes
	// at most its fair share of the workers while another client has
	// queued work. Defaults to Workers less a reserve of max(1, Workers/8)
	// (all of them when Workers is 1).
	ClientWorkers int
	// MemoryBudget bounds the sum of the memory limits of the plugin calls
	// in flight; a task whose limit does not fit waits in the queue, one
	// whose limit alone exceeds the budget is refused. Defaults to 4 GiB.
	MemoryBudget int64
	// DefaultMemoryLimit is the memory limit of a task that names none, as
	// the Executor applies it; the budget counts it for such tasks.
	// Defaults to 64 MiB.
	DefaultMemoryLimit int64
	// ClientMemoryLimit is the largest memory_limit_bytes a client without
	// the admin scope may ask for, unless the client has a ceiling of its
	// own (Client.MaxMemoryLimit). Defaults to 256 MiB.
	ClientMemoryLimit int64
	// MaxPendingSignals and MaxPendingSignalBytes bound the signals a
	// workflow holds that no wait consumed yet, by count and by the size of
	// their values; a signal past either is refused with
	// fault.SignalLimitExceeded. Default 1,000 and 16 MiB.
	MaxPendingSignals     int
	MaxPendingSignalBytes int64

	// MaxHistoryEvents bounds a workflow's log: a run that would commit
	// past it fails the workflow with fault.HistoryLimitExceeded, never
	// retried, instead of letting every later run replay an ever longer
	// journal (a workflow that runs for long continues as new). Defaults
	// to 50,000 events.
	MaxHistoryEvents int64

	// MaxQueries bounds the queries answered at once (each replays a
	// journal in a wasm instance of its own); a query that finds no slot
	// within half a second is refused with fault.QueryLimitExceeded.
	// Defaults to 4.
	MaxQueries int
	// QueryTimeout bounds one query: reading the journal, replaying it and
	// running the handler; a query past it fails with fault.Timeout.
	// Defaults to 10 s.
	QueryTimeout time.Duration
	// CancelGrace is how long a workflow run in progress when its cancel
	// request arrives may go on before the request stops it: a run that
	// watches the request sees it on its next run, so a run this long is
	// stuck, and the workflow is terminated (TaskTerminate). Defaults to
	// 5 s.
	CancelGrace time.Duration

	// ProgressInterval is the shortest time between two task.progress
	// events of one call: reports in between coalesce, the latest one
	// kept, and the last one is written when the call ends. Defaults to
	// 250 ms.
	ProgressInterval time.Duration

	// Host is this engine's host id (see store.ValidHost): every task it
	// claims carries a lease for it, and the task document shows it while
	// the lease is held. Hosts sharing a store need distinct ids, and an id
	// is one process's at a time: an engine that opens on a shared store
	// takes back at once the tasks its id held (left over from its earlier
	// run), where another id waits for their leases to run out. Defaults
	// to the machine's host name with a random suffix (DefaultHost).
	Host string
	// LeaseTTL is the lease of the tasks this engine claims: the engine
	// renews its leases every third of it, and a host that stops renewing
	// loses its tasks to another host of a shared store once it runs out.
	// Defaults to store.DefaultLeaseTTL.
	LeaseTTL time.Duration

	// MaxSchedulesPerClient bounds the schedules of one client
	// (ScheduleCreate answers fault.ScheduleLimitExceeded past it).
	// Defaults to DefaultMaxSchedulesPerClient.
	MaxSchedulesPerClient int
	// ScheduleCatchupTicks bounds the ticks one pass of the schedule loop
	// starts for one schedule (after downtime, the catch-up); the next
	// pass starts the rest. Defaults to DefaultScheduleCatchupTicks.
	ScheduleCatchupTicks int

	// Now is the clock of retention and retry schedules. Defaults to time.Now.
	Now func() time.Time
}

// DefaultHost returns a fresh host id: the machine's host name (reduced to
// the characters of a host id, "host" when there is none) and a random
// suffix, so that two engines on one machine differ.
func DefaultHost() string {
	name, _ := os.Hostname()
	b := make([]byte, 0, len(name))
	for _, c := range []byte(name) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			b = append(b, c)
		}
	}
	name = strings.TrimLeft(string(b), ".-_")
	if len(name) > 100 {
		name = name[:100]
	}
	if name == "" {
		name = "host"
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	return name + "-" + hex.EncodeToString(r[:])
}

// Defaults of Config.
const (
	DefaultWorkers           = 128
	DefaultPollInterval      = 5 * time.Second
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultRetentionInterval = time.Minute
	DefaultRetentionBatch    = 500

	DefaultMemoryBudget          = 4 << 30
	DefaultMemoryLimit           = 64 << 20
	DefaultClientMemoryLimit     = 256 << 20
	DefaultMaxPendingSignals     = 1000
	DefaultMaxPendingSignalBytes = 16 << 20

	DefaultMaxHistoryEvents = 50000

	DefaultMaxQueries   = 4
	DefaultQueryTimeout = 10 * time.Second

	DefaultCancelGrace = 5 * time.Second

	DefaultMaxSchedulesPerClient = 10000
	DefaultScheduleCatchupTicks  = 100
)

// DefaultProgressInterval is the default of Config.ProgressInterval.
const DefaultProgressInterval = 250 * time.Millisecond

// DefaultActivityRetry is the default of Config.DefaultRetry: three
// attempts, the second 1 s after the first fails and the third 2 s after
// the second (±20% jitter), as Temporal's default policy grows its waits.
var DefaultActivityRetry = store.RetryPolicy{
	InitialInterval:    DefaultInitialInterval,
	BackoffCoefficient: DefaultBackoffCoefficient,
	MaximumAttempts:    3,
}

// DefaultClientWorkers is the default of Config.ClientWorkers for a daemon
// of n workers: n less a reserve of max(1, n/8), and at least 1.
func DefaultClientWorkers(n int) int {
	return max(1, n-max(1, n/8))
}

// withDefaults validates c and returns it with every default filled in.
func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Store == nil:
		return c, errors.New("runtime: Config.Store is required")
	case c.Executor == nil:
		return c, errors.New("runtime: Config.Executor is required")
	case c.Modules == nil:
		return c, errors.New("runtime: Config.Modules is required")
	case c.Workers < 0, c.PollInterval < 0, c.ShutdownTimeout < 0, c.Retention < 0,
		c.RetentionInterval < 0, c.RetentionBatch < 0, c.ClientWorkers < 0, c.MemoryBudget < 0,
		c.DefaultMemoryLimit < 0, c.ClientMemoryLimit < 0, c.MaxPendingSignals < 0, c.MaxPendingSignalBytes < 0,
		c.MaxQueries < 0, c.QueryTimeout < 0, c.MaxHistoryEvents < 0, c.CancelGrace < 0,
		c.MaxSchedulesPerClient < 0, c.ScheduleCatchupTicks < 0:
		return c, errors.New("runtime: negative Config value")
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.RetentionInterval == 0 {
		c.RetentionInterval = DefaultRetentionInterval
	}
	if c.RetentionBatch == 0 {
		c.RetentionBatch = DefaultRetentionBatch
	}
	if c.ClientWorkers == 0 || c.ClientWorkers > c.Workers {
		c.ClientWorkers = DefaultClientWorkers(c.Workers)
	}
	if c.MemoryBudget == 0 {
		c.MemoryBudget = DefaultMemoryBudget
	}
	if c.DefaultMemoryLimit == 0 {
		c.DefaultMemoryLimit = DefaultMemoryLimit
	}
	if c.ClientMemoryLimit == 0 {
		c.ClientMemoryLimit = DefaultClientMemoryLimit
	}
	if c.MaxPendingSignals == 0 {
		c.MaxPendingSignals = DefaultMaxPendingSignals
	}
	if c.MaxPendingSignalBytes == 0 {
		c.MaxPendingSignalBytes = DefaultMaxPendingSignalBytes
	}
	if c.MaxHistoryEvents == 0 {
		c.MaxHistoryEvents = DefaultMaxHistoryEvents
	}
	if c.MaxQueries == 0 {
		c.MaxQueries = DefaultMaxQueries
	}
	if c.QueryTimeout == 0 {
		c.QueryTimeout = DefaultQueryTimeout
	}
	if c.CancelGrace == 0 {
		c.CancelGrace = DefaultCancelGrace
	}
	if c.MaxSchedulesPerClient == 0 {
		c.MaxSchedulesPerClient = DefaultMaxSchedulesPerClient
	}
	if c.ScheduleCatchupTicks == 0 {
		c.ScheduleCatchupTicks = DefaultScheduleCatchupTicks
	}
	switch {
	case c.ProgressInterval < 0:
		return c, errors.New("runtime: negative Config value")
	case c.ProgressInterval == 0:
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	switch {
	case c.Host == "":
		c.Host = DefaultHost()
	case !store.ValidHost(c.Host):
		return c, fmt.Errorf("runtime: Config.Host %q is not a host id (1 to 128 letters, digits, '.', '_', ':', '@' and '-')", c.Host)
	}
	switch {
	case c.LeaseTTL < 0:
		return c, errors.New("runtime: negative Config value")
	case c.LeaseTTL == 0:
		c.LeaseTTL = store.DefaultLeaseTTL
	}
	c.LeaseTTL = store.LeaseTTLOr(c.LeaseTTL)
	if c.DefaultRetry == nil {
		r := DefaultActivityRetry
		c.DefaultRetry = &r
	} else if err := retry.Check(c.DefaultRetry); err != nil {
		return c, errors.New("runtime: Config.DefaultRetry: " + fault.Message(err))
	}
	var err error
	if c.StoreRetry, err = c.StoreRetry.withDefaults(); err != nil {
		return c, err
	}
	return c, nil
}
