package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store/internal/backend"
)

// workKey is the watchers key of WorkWatch: no task has the empty id.
const workKey = ""

// maxNotifyPayload bounds a notification's payload, below the server's
// 8000 bytes; a transaction that touched more tasks than fit says "*"
// (every watcher) instead.
const maxNotifyPayload = 4000

// watchers is the registry behind EventWatch and WorkWatch: per task (and
// workKey), the channels to signal after a commit.
//
// A commit reaches them on two paths. In this process, write calls publish
// after the COMMIT returned. Across hosts, the transaction itself sends
// one pg_notify on the store's channel (payload: this store's nonce, "w"
// when it may have made work claimable, and the task ids whose logs grew),
// which the COMMIT delivers to every listening session; the store's
// listener connection (listen) hands each notification of another store
// to handle. Notifications are a hint, never the record: listen fires
// every watcher when its connection is (re)established, and poll fires
// them all at an interval, so a notification lost with a dropped
// connection delays a reader by at most that interval.
type watchers struct {
	// channel is the notification channel, one per schema, so stores in
	// different schemas of one database do not wake each other.
	channel string
	// nonce tells this store's own notifications apart.
	nonce string

	*backend.Watchers
}

func newWatchers(channel string) *watchers {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &watchers{channel: channel, nonce: hex.EncodeToString(b), Watchers: backend.NewWatchers()}
}

func (w *watchers) add(key string) (<-chan struct{}, func()) { return w.Add(key) }

// publish reports the tasks (and workKey) a commit of this process
// touched.
func (w *watchers) publish(keys []string) { w.Notify(keys) }

// payload returns the notification of a transaction that touched keys,
// and false when there is nothing to tell.
func (w *watchers) payload(keys []string) (string, bool) {
	if len(keys) == 0 {
		return "", false
	}
	work := "-"
	var b strings.Builder
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if k == workKey {
			work = "w"
			continue
		}
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		b.WriteByte(' ')
		b.WriteString(k)
	}
	ids := b.String()
	if len(ids) > maxNotifyPayload {
		ids = " *"
	}
	return w.nonce + " " + work + ids, true
}

// handle delivers a notification received from the database; this
// store's own were delivered by publish already.
func (w *watchers) handle(payload string) {
	f := strings.Fields(payload)
	if len(f) < 2 || f[0] == w.nonce {
		return
	}
	keys := f[2:]
	if f[1] == "w" {
		keys = append(keys, workKey)
	}
	if slices.Contains(keys, "*") {
		w.NotifyAll()
		return
	}
	w.Notify(keys)
}

// listenConn opens a connection, outside the pool, listening on the
// store's channel. Open opens the first one before it returns, so that no
// watcher can miss a commit before the listener listens.
func (db *DB) listenConn(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{db.watch.channel}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, err
	}
	return conn, nil
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// listen hands the notifications of conn to the watchers until ctx ends,
// and reconnects with a backoff when the connection drops. Every
// reconnection fires all watchers: what was notified while no connection
// listened is lost.
func (db *DB) listen(ctx context.Context, cfg *pgx.ConnConfig, conn *pgx.Conn) {
	defer close(db.listenDone)
	wait := 100 * time.Millisecond
	for {
		for conn != nil {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				closeConn(conn)
				conn = nil
				if ctx.Err() == nil {
					db.log.Debug("event listener lost its connection", "error", err)
				}
				break
			}
			db.watch.handle(n.Payload)
			wait = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
		c, err := db.listenConn(ctx, cfg)
		if err != nil {
			db.log.Debug("event listener reconnects", "error", err, "after", wait)
			continue
		}
		conn = c
		db.watch.NotifyAll()
	}
}

// poll fires every watcher each interval until ctx ends: the safety net
// under the notifications.
func (db *DB) poll(ctx context.Context, every time.Duration) {
	defer close(db.pollDone)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			db.watch.NotifyAll()
		}
	}
}

// EventWatch implements store.Store.
func (db *DB) EventWatch(taskID string) (<-chan struct{}, func()) {
	return db.watch.add(taskID)
}

// WorkWatch implements store.Store.
func (db *DB) WorkWatch() (<-chan struct{}, func()) {
	return db.watch.add(workKey)
}
