package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// LockHolder is what the lock file (LockFile) says about the daemon that
// holds it.
type LockHolder struct {
	PID       int       `json:"pid"`
	Addr      string    `json:"addr,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// dataLock is the exclusive lock of one data directory. The kernel holds
// it on the open file description, so it is released when the process
// ends however it ends; the file itself stays, and a file left by a killed
// daemon does not block the next one.
type dataLock struct {
	f      *os.File
	holder LockHolder
}

// DataDirInUseError is the error of a data directory another daemon holds.
type DataDirInUseError struct {
	dir    string
	holder *LockHolder // nil when the file says nothing readable
}

// Error names the daemon that holds the directory.
func (e *DataDirInUseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "weft: data directory %s is in use by ", e.dir)
	h := e.holder
	if h == nil || h.PID == 0 {
		b.WriteString("another weft process (see " + filepath.Join(e.dir, LockFile) + ")")
		return b.String()
	}
	fmt.Fprintf(&b, "weft pid %d", h.PID)
	if h.Addr != "" {
		fmt.Fprintf(&b, " (http://%s)", h.Addr)
	}
	if !h.StartedAt.IsZero() {
		fmt.Fprintf(&b, ", started %s", h.StartedAt.Local().Format(time.RFC3339))
	}
	return b.String()
}

// lockDataDir takes the exclusive lock of dir (flock LOCK_EX|LOCK_NB on
// dir/weft.lock) and writes this process's pid and start time into the
// file. When another process holds the lock it returns *DataDirInUseError
// naming it, having changed nothing.
func lockDataDir(dir string) (*dataLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &DataDirInUseError{dir: dir, holder: readLockHolder(path)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	l := &dataLock{f: f, holder: LockHolder{PID: os.Getpid(), StartedAt: time.Now().UTC().Truncate(time.Second)}}
	if err := l.write(); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// setAddr records the address the daemon listens on in the lock file.
func (l *dataLock) setAddr(addr string) error {
	l.holder.Addr = addr
	return l.write()
}

// write replaces the lock file's content with l.holder.
func (l *dataLock) write() error {
	data, err := json.Marshal(l.holder)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	if _, err := l.f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	return nil
}

// release drops the lock. The file stays: removing it would let a third
// process lock a new file while a second one still holds the old one.
func (l *dataLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = flock(l.f, unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// readLockHolder reads the lock file of a daemon that holds it; nil when
// it says nothing readable (the holder may be rewriting it). A few reads
// a millisecond apart get past such a rewrite.
func readLockHolder(path string) *LockHolder {
	for range 5 {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var h LockHolder
		if json.Unmarshal(data, &h) == nil && h.PID > 0 {
			return &h
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// flock calls flock(2), again after EINTR.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
