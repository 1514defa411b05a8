package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/store/storetest"
)

// crashHelperEnv switches the test binary into the crash helper: it opens
// the database named by the variable and writes until it is killed.
const crashHelperEnv = "WEFT_STORE_CRASH_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashHelperEnv); path != "" {
		if err := crashHelper(path); err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashHelper creates tasks, appends events, cancels and transitions tasks
// on several goroutines, and prints each write on stdout after the write
// returned, so the parent knows what was committed:
//
//	T <task>                  task inserted (sequence 0)
//	E <task> <seq>            event appended at seq
//	S <task> <status> <seq>   status event at seq records status
func crashHelper(path string) error {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...) // one write(2) per line, unbuffered
	}
	var (
		recentMu sync.Mutex
		recent   []string
	)
	policies := []store.OnRestart{store.OnRestartFail, store.OnRestartRetry, store.OnRestartResume}
	errc := make(chan error, 1)
	for w := range 6 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for {
				if err := crashStep(ctx, db, r, policies, report, &recentMu, &recent); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	return <-errc
}

func crashStep(ctx context.Context, db *sqlite.DB, r *rand.Rand, policies []store.OnRestart,
	report func(string, ...any), recentMu *sync.Mutex, recent *[]string,
) error {
	if r.IntN(4) == 0 {
		// Cancel a task another goroutine may be working on.
		recentMu.Lock()
		var id string
		if len(*recent) > 0 {
			id = (*recent)[r.IntN(len(*recent))]
		}
		recentMu.Unlock()
		if id == "" {
			return nil
		}
		t, changed, err := db.TaskCancel(ctx, id)
		if err != nil {
			return err
		}
		if changed {
			report("S %s %s %d", t.ID, t.Status, t.LastSeq)
		}
		return nil
	}
	t, err := db.TaskInsert(ctx, &store.TaskInsertParams{
		Module: "echo", ModuleDigest: storetest.Digest, Function: "echo",
		OnRestart: policies[r.IntN(3)], Input: storetest.Frame("in"),
	})
	if err != nil {
		return err
	}
	report("T %s", t.ID)
	recentMu.Lock()
	*recent = append(*recent, t.ID)
	if len(*recent) > 64 {
		*recent = (*recent)[1:]
	}
	recentMu.Unlock()

	steps := []struct {
		from, to store.Status
	}{
		{store.StatusQueued, store.StatusLoading},
		{store.StatusLoading, store.StatusRunning},
	}
	stop := r.IntN(4) // 0: stay queued, 1: loading, 2+: running and maybe further
	for i, st := range steps {
		if i >= stop {
			return nil
		}
		t, err = db.TaskTransition(ctx, &store.TaskTransitionParams{ID: t.ID, From: []store.Status{st.from}, To: st.to})
		if err != nil {
			return lostOrErr(err)
		}
		report("S %s %s %d", t.ID, t.Status, t.LastSeq)
	}
	for range r.IntN(4) {
		evs, err := db.EventAppend(ctx, &store.EventAppendParams{
			TaskID: t.ID,
			Events: []store.EventDraft{{Type: store.EventLog, Payload: json.RawMessage(`{"line":"working"}`)}},
		})
		if err != nil {
			return lostOrErr(err)
		}
		report("E %s %d", t.ID, evs[0].Seq)
	}
	if r.IntN(2) == 0 {
		if _, err := db.TaskCheckpoint(ctx, &store.TaskCheckpointParams{ID: t.ID, Checkpoint: storetest.Frame("cp")}); err != nil {
			return lostOrErr(err)
		}
	}
	p := &store.TaskTransitionParams{ID: t.ID, From: []store.Status{store.StatusRunning}}
	switch r.IntN(4) {
	case 0:
		return nil // left running
	case 1:
		p.To, p.Error = store.StatusFailed, &store.TaskError{Code: "plugin_error", Message: "boom"}
	default:
		p.To, p.Output = store.StatusCompleted, storetest.Frame("out")
	}
	t, err = db.TaskTransition(ctx, p)
	if err != nil {
		return lostOrErr(err)
	}
	report("S %s %s %d", t.ID, t.Status, t.LastSeq)
	return nil
}

// lostOrErr ignores the errors of a task another goroutine cancelled.
func lostOrErr(err error) error {
	if isExpected(err) {
		return nil
	}
	return err
}

func isExpected(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrTaskFinished)
}

// crashReport is what the helper said it committed.
type crashReport struct {
	tasks    map[string]bool
	events   map[string]int64 // task → highest appended seq
	statuses []crashStatus
}

type crashStatus struct {
	task   string
	status store.Status
	seq    int64
}

// readReport reads the helper's lines until EOF and returns how many it
// read; it closes first once it has read the first line.
func readReport(r io.Reader, rep *crashReport, first chan<- struct{}) (int, error) {
	br := bufio.NewReader(r)
	lines := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			// EOF; a final line without its newline was cut by the kill
			// and carries no promise.
			return lines, nil
		}
		lines++
		if lines == 1 {
			close(first)
		}
		f := strings.Fields(line)
		var seqErr error
		switch {
		case len(f) == 2 && f[0] == "T":
			rep.tasks[f[1]] = true
		case len(f) == 3 && f[0] == "E":
			var seq int64
			seq, seqErr = strconv.ParseInt(f[2], 10, 64)
			rep.events[f[1]] = max(rep.events[f[1]], seq)
		case len(f) == 4 && f[0] == "S":
			var seq int64
			seq, seqErr = strconv.ParseInt(f[3], 10, 64)
			rep.statuses = append(rep.statuses, crashStatus{f[1], store.Status(f[2]), seq})
		default:
			return lines, fmt.Errorf("crash helper said %q", line)
		}
		if seqErr != nil {
			return lines, fmt.Errorf("crash helper said %q: %w", line, seqErr)
		}
	}
}

// longTests reports whether the long crash and soak runs are asked for
// (WEFT_LONG_TESTS=1, as .ci/run sets).
func longTests() bool { return os.Getenv("WEFT_LONG_TESTS") == "1" }

// TestCrash SIGKILLs a writer process at random moments, each time after it
// reported its first commit, and reopens the database after each kill:
// 10 kills, 50 with WEFT_LONG_TESTS=1.
func TestCrash(t *testing.T) {
	kills := 10
	if longTests() {
		kills = 50
	}
	path := filepath.Join(t.TempDir(), "weft.db")
	rep := &crashReport{tasks: map[string]bool{}, events: map[string]int64{}}
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	total := 0
	for i := range kills {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"="+path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var (
			lines   int
			readErr error
			first   = make(chan struct{})
			done    = make(chan struct{})
		)
		go func() {
			defer close(done)
			lines, readErr = readReport(stdout, rep, first)
		}()
		// The kill falls at a random moment after the first commit, so
		// that every round has something to lose however slow the machine.
		select {
		case <-first:
		case <-done:
		}
		time.Sleep(time.Duration(r.IntN(400)) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill()) // SIGKILL
		<-done
		_ = cmd.Wait()
		require.NoError(t, readErr)
		require.NotContains(t, stderr.String(), "crash helper:", "the helper failed by itself")
		require.Positive(t, lines, "the helper reported no commit before it ended: %s", stderr.String())
		total += lines

		// Every reopen must succeed and find everything that was reported.
		db, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Logger: testLogger(t)})
		require.NoError(t, err, "reopen after kill %d", i)
		checkReport(t, db, rep)
		checkAllLogs(t, path)
		if i%2 == 1 {
			// Half the restarts run the start-up recovery, as weft serve does.
			_, err := db.TaskRecover(t.Context())
			require.NoError(t, err)
			checkAllLogs(t, path)
		}
		require.NoError(t, db.Close(t.Context()))
	}
	t.Logf("%d kills, %d committed writes reported, %d tasks", kills, total, len(rep.tasks))
}

// checkReport requires every reported write to be in the database.
func checkReport(t *testing.T, db *sqlite.DB, rep *crashReport) {
	t.Helper()
	ctx := t.Context()
	for id := range rep.tasks {
		task, err := db.TaskGet(ctx, id)
		require.NoError(t, err, "reported task %s is missing", id)
		require.GreaterOrEqual(t, task.LastSeq, rep.events[id], "task %s lost events", id)
	}
	for _, s := range rep.statuses {
		evs, err := db.EventList(ctx, &store.EventListParams{TaskID: s.task, From: s.seq, Limit: 1})
		require.NoError(t, err)
		require.Len(t, evs, 1, "status event %s#%d is missing", s.task, s.seq)
		st, ok := storetest.EventStatus(t, evs[0])
		require.True(t, ok, "event %s#%d is no status event", s.task, s.seq)
		require.Equal(t, s.status, st, "event %s#%d", s.task, s.seq)
	}
	rep.statuses = rep.statuses[:0] // checked once; events never change
}

// checkAllLogs checks every task of the database in one pass over the raw
// tables: sequences from 0 without gaps up to last_seq, and the status of
// the last status event equal to the task's status.
func checkAllLogs(t *testing.T, path string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer func() { _ = raw.Close() }()
	ctx := t.Context()
	status := map[string]string{}
	lastSeq := map[string]int64{}
	rows, err := raw.QueryContext(ctx, "SELECT id, status, last_seq FROM tasks")
	require.NoError(t, err)
	for rows.Next() {
		var (
			id, st string
			last   int64
		)
		require.NoError(t, rows.Scan(&id, &st, &last))
		status[id], lastSeq[id] = st, last
	}
	require.NoError(t, rows.Err())
	rows.Close()

	rows, err = raw.QueryContext(ctx, "SELECT task_id, seq, type, payload FROM task_events ORDER BY task_id, seq")
	require.NoError(t, err)
	defer rows.Close()
	var (
		cur      string
		next     int64
		curState string
		seen     = map[string]bool{}
	)
	finish := func() {
		if cur == "" {
			return
		}
		require.Equal(t, lastSeq[cur]+1, next, "task %s: events end at %d, last_seq %d", cur, next-1, lastSeq[cur])
		require.Equal(t, status[cur], curState, "task %s: status disagrees with its last status event", cur)
	}
	for rows.Next() {
		var (
			id, typ, payload string
			seq              int64
		)
		require.NoError(t, rows.Scan(&id, &seq, &typ, &payload))
		if id != cur {
			finish()
			cur, next, curState = id, 0, ""
			seen[id] = true
			_, ok := status[id]
			require.True(t, ok, "events of unknown task %s", id)
		}
		require.Equal(t, next, seq, "task %s: sequence gap", id)
		next++
		if store.IsStatusEvent(typ) {
			var p struct {
				Status string `json:"status"`
			}
			require.NoError(t, json.Unmarshal([]byte(payload), &p))
			curState = p.Status
		}
	}
	require.NoError(t, rows.Err())
	finish()
	require.Len(t, seen, len(status), "every task has events")
}
