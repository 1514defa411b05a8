package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/hashicorp/go-hclog"
)

// checkpointer copies committed WAL frames back into the database file on
// its own connection, so that the writer's commits never wait for a
// checkpoint's page copies and fsyncs. A PASSIVE checkpoint runs beside the
// writer and the readers without blocking either.
type checkpointer struct {
	conn *sql.Conn
	log  hclog.Logger
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// The writer asks for a checkpoint after this many commits; the writer
// connection itself checkpoints only when the WAL reaches walFallbackPages,
// which happens only if the checkpointer falls far behind.
const (
	checkpointEvery  = 32
	walFallbackPages = 20000
	checkpointPause  = 50 * time.Millisecond
)

func newCheckpointer(conn *sql.Conn, log hclog.Logger) *checkpointer {
	c := &checkpointer{
		conn: conn,
		log:  log,
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go c.run()
	return c
}

// request asks for a checkpoint without waiting.
func (c *checkpointer) request() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		var busy, logFrames, done int
		err := c.conn.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &done)
		if err != nil {
			c.log.Warn("checkpoint", "error", err)
		}
		select {
		case <-c.stop:
			return
		case <-time.After(checkpointPause):
		}
	}
}

// close stops the checkpointer and releases its connection.
func (c *checkpointer) close() {
	close(c.stop)
	<-c.done
	_ = c.conn.Close()
}
