package host

import (
	"fmt"
	"sync"
	"time"
	"unicode/utf8"
)

// LogLimits bound what plugins write to the daemon's own log: the lines of
// the log import and of stdout and stderr, during a call, during
// _initialize and while the host reads the manifest. Each module has token
// buckets of lines and bytes per second with a burst; each call (and each
// initialization of an instance) has its own buckets at half the module's
// rates and bursts, so that one flooding call leaves room for the module's
// others, and a hard cap of lines. A line over a bucket or the cap is
// dropped from the daemon's log, and a warning "plugin log lines dropped"
// with the counts of lines and bytes follows at most every ReportEvery
// and at the end of the call. CallRequest.Log still receives every line.
// The zero value of every field means its default.
type LogLimits struct {
	// Rate is the lines per second a module may write to the daemon's log.
	// Defaults to 50.
	Rate float64
	// Burst is how many lines a module may write at once, above Rate.
	// Defaults to 500.
	Burst int
	// ByteRate is the bytes per second a module may write. Defaults to
	// 64 KiB.
	ByteRate float64
	// ByteBurst is how many bytes a module may write at once, above
	// ByteRate. Defaults to 512 KiB, and at least twice MaxLine.
	ByteBurst int
	// CallLines caps the lines one call (or one initialization) writes to
	// the daemon's log, whatever the rates. Defaults to 10,000.
	CallLines int
	// MaxLine is the longest line, in bytes, written to the daemon's log;
	// a longer one is cut and marked. Defaults to 4 KiB.
	MaxLine int
	// ReportEvery is how often, at most, a call that loses lines says so.
	// Defaults to 5 s.
	ReportEvery time.Duration
}

// Defaults of LogLimits.
const (
	DefaultLogRate      = 50
	DefaultLogBurst     = 500
	DefaultLogByteRate  = 64 << 10
	DefaultLogByteBurst = 512 << 10
	DefaultLogCallLines = 10_000
	DefaultLogMaxLine   = 4 << 10
	defaultLogReport    = 5 * time.Second
)

// withDefaults fills in the defaults of l.
func (l LogLimits) withDefaults() (LogLimits, error) {
	if l.Rate < 0 || l.Burst < 0 || l.ByteRate < 0 || l.ByteBurst < 0 || l.CallLines < 0 || l.MaxLine < 0 || l.ReportEvery < 0 {
		return l, fmt.Errorf("host config: negative plugin log limit %+v", l)
	}
	if l.Rate == 0 {
		l.Rate = DefaultLogRate
	}
	if l.Burst == 0 {
		l.Burst = DefaultLogBurst
	}
	if l.ByteRate == 0 {
		l.ByteRate = DefaultLogByteRate
	}
	if l.ByteBurst == 0 {
		l.ByteBurst = DefaultLogByteBurst
	}
	if l.CallLines == 0 {
		l.CallLines = DefaultLogCallLines
	}
	if l.MaxLine == 0 {
		l.MaxLine = DefaultLogMaxLine
	}
	// "…(cut)" must fit, and a line of MaxLine bytes must fit a call's
	// byte burst.
	l.MaxLine = max(l.MaxLine, 64)
	l.ByteBurst = max(l.ByteBurst, 2*l.MaxLine)
	if l.ReportEvery == 0 {
		l.ReportEvery = defaultLogReport
	}
	return l, nil
}

// bucket is a token bucket.
type bucket struct {
	tokens, rate, burst float64
	last                time.Time
}

func newBucket(rate, burst float64) bucket {
	return bucket{tokens: burst, rate: rate, burst: burst}
}

// refill adds the tokens earned since the last refill.
func (b *bucket) refill(now time.Time) {
	if !b.last.IsZero() {
		if d := now.Sub(b.last); d > 0 {
			b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
		}
	}
	b.last = now
}

// lineBudget is a pair of buckets, lines and bytes.
type lineBudget struct {
	lines, bytes bucket
}

func newLineBudget(l LogLimits, share float64) lineBudget {
	return lineBudget{
		lines: newBucket(l.Rate*share, float64(l.Burst)*share),
		bytes: newBucket(l.ByteRate*share, float64(l.ByteBurst)*share),
	}
}

// has reports whether one line of n bytes fits, after a refill.
func (b *lineBudget) has(now time.Time, n int) bool {
	b.lines.refill(now)
	b.bytes.refill(now)
	return b.lines.tokens >= 1 && b.bytes.tokens >= float64(n)
}

// take spends one line of n bytes.
func (b *lineBudget) take(n int) {
	b.lines.tokens--
	b.bytes.tokens -= float64(n)
}

// moduleLogs is the daemon-log budget of one module, shared by its
// instances.
type moduleLogs struct {
	mu sync.Mutex
	b  lineBudget
}

func newModuleLogs(l LogLimits) *moduleLogs { return &moduleLogs{b: newLineBudget(l, 1)} }

// logScope is the daemon-log budget of one call, or of one initialization
// of an instance: its own buckets, its count of lines against
// LogLimits.CallLines, and what it dropped since it last said so. It
// belongs to the instance's goroutine.
type logScope struct {
	b            lineBudget
	lines        int
	droppedLines int
	droppedBytes int64
	reported     time.Time
}

// begin starts a new scope.
func (s *logScope) begin(l LogLimits, now time.Time) {
	*s = logScope{b: newLineBudget(l, 0.5), reported: now}
}

// admit reports whether a line of n bytes may go to the daemon's log, and
// spends it from the scope's and the module's budgets when it may.
func (s *logScope) admit(l LogLimits, m *moduleLogs, now time.Time, n int) bool {
	cut := min(n, l.MaxLine) // what the daemon's log would get
	if s.lines >= l.CallLines || !s.b.has(now, cut) {
		return s.drop(n)
	}
	m.mu.Lock()
	ok := m.b.has(now, cut)
	if ok {
		m.b.take(cut)
	}
	m.mu.Unlock()
	if !ok {
		return s.drop(n)
	}
	s.b.take(cut)
	s.lines++
	return true
}

func (s *logScope) drop(n int) bool {
	s.droppedLines++
	s.droppedBytes += int64(n)
	return false
}

// due reports whether the scope has dropped lines to report: at the end
// (final), or once ReportEvery passed since the last report.
func (s *logScope) due(l LogLimits, now time.Time, final bool) bool {
	return s.droppedLines > 0 && (final || now.Sub(s.reported) >= l.ReportEvery)
}

// take returns the counts to report and starts counting again.
func (s *logScope) take(now time.Time) (lines int, bytes int64) {
	lines, bytes = s.droppedLines, s.droppedBytes
	s.droppedLines, s.droppedBytes, s.reported = 0, 0, now
	return lines, bytes
}

// cutLine shortens msg to at most n bytes, on a rune boundary, marked.
func cutLine(msg string, n int) string {
	if len(msg) <= n {
		return msg
	}
	const mark = " …(cut)"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(msg[i]) {
		i--
	}
	return msg[:i] + mark
}
