package runtime

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/weft-run/weft/runtime/fault"
)

// ScheduleSpec is when a schedule ticks: a cron expression in a time zone,
// or a fixed interval, with an optional jitter and a start and an end.
type ScheduleSpec struct {
	// Cron is a standard five-field cron expression (minute, hour, day of
	// month, month, day of week) or a descriptor such as @hourly or
	// @daily, read in Timezone. Exactly one of Cron and IntervalMS.
	Cron string `json:"cron,omitempty"`
	// IntervalMS ticks every IntervalMS milliseconds (at least
	// MinScheduleInterval), at the instants OffsetMS after a multiple of
	// the interval since the Unix epoch.
	IntervalMS int64 `json:"interval_ms,omitempty"`
	// OffsetMS shifts an interval's ticks, from 0 to below IntervalMS.
	OffsetMS int64 `json:"offset_ms,omitempty"`
	// Timezone is the IANA time zone of Cron. Defaults to UTC.
	Timezone string `json:"timezone,omitempty"`
	// JitterMS delays each tick by a duration from 0 to JitterMS that the
	// schedule id and the tick's nominal time fix, so that every host and
	// every restart computes the same one. At most the interval (for a
	// cron expression, MaxScheduleCronJitter).
	JitterMS int64 `json:"jitter_ms,omitempty"`
	// StartAt is the earliest nominal tick; zero for none.
	StartAt time.Time `json:"start_at,omitzero"`
	// EndAt is the latest nominal tick; zero for none.
	EndAt time.Time `json:"end_at,omitzero"`
}

// Bounds of a schedule spec.
const (
	// MinScheduleInterval is the shortest interval.
	MinScheduleInterval = time.Second
	// MaxScheduleInterval is the longest interval (a year).
	MaxScheduleInterval = 366 * 24 * time.Hour
	// MaxScheduleCronJitter is the largest jitter of a cron schedule.
	MaxScheduleCronJitter = 24 * time.Hour
	// MaxScheduleCronLen bounds a cron expression, in bytes.
	MaxScheduleCronLen = 256
)

// cronParser reads the standard five fields and the descriptors (@every
// is refused: intervals are interval_ms).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// tickSpec is a compiled ScheduleSpec of one schedule.
type tickSpec struct {
	id       string
	cron     cron.Schedule
	loc      *time.Location
	interval int64 // ms
	offset   int64 // ms
	jitter   int64 // ms
	start    time.Time
	end      time.Time
}

// compileSpec checks spec and compiles it for schedule id. It returns
// fault.Invalid with the param of the field at fault.
func compileSpec(id string, spec *ScheduleSpec) (*tickSpec, error) {
	c := &tickSpec{id: id, loc: time.UTC, start: spec.StartAt.UTC(), end: spec.EndAt.UTC()}
	switch {
	case spec.Cron != "" && spec.IntervalMS != 0:
		return nil, fault.ParamErrorf("spec", "spec takes one of cron and interval_ms, not both")
	case spec.Cron == "" && spec.IntervalMS == 0:
		return nil, fault.ParamErrorf("spec", "spec needs cron or interval_ms")
	}
	if spec.Timezone != "" {
		if spec.Cron == "" {
			return nil, fault.ParamErrorf("spec.timezone", "spec.timezone applies to a cron expression")
		}
		loc, err := time.LoadLocation(spec.Timezone)
		if err != nil || spec.Timezone == "Local" {
			return nil, fault.ParamErrorf("spec.timezone", "spec.timezone %q is not an IANA time zone name", spec.Timezone)
		}
		c.loc = loc
	}
	maxJitter := int64(MaxScheduleCronJitter / time.Millisecond)
	if spec.Cron != "" {
		if len(spec.Cron) > MaxScheduleCronLen {
			return nil, fault.ParamErrorf("spec.cron", "spec.cron is longer than %d bytes", MaxScheduleCronLen)
		}
		if spec.OffsetMS != 0 {
			return nil, fault.ParamErrorf("spec.offset_ms", "spec.offset_ms applies to interval_ms")
		}
		if strings.HasPrefix(strings.TrimSpace(spec.Cron), "@every") {
			return nil, fault.ParamErrorf("spec.cron", "spec.cron does not take @every; give interval_ms instead")
		}
		s, err := cronParser.Parse(spec.Cron)
		if err != nil {
			return nil, fault.ParamErrorf("spec.cron", "spec.cron %q: %v", spec.Cron, err)
		}
		c.cron = s
	} else {
		if spec.IntervalMS < MinScheduleInterval.Milliseconds() || spec.IntervalMS > MaxScheduleInterval.Milliseconds() {
			return nil, fault.ParamErrorf("spec.interval_ms", "spec.interval_ms must be from %d to %d",
				MinScheduleInterval.Milliseconds(), MaxScheduleInterval.Milliseconds())
		}
		if spec.OffsetMS < 0 || spec.OffsetMS >= spec.IntervalMS {
			return nil, fault.ParamErrorf("spec.offset_ms", "spec.offset_ms must be from 0 to below interval_ms")
		}
		c.interval, c.offset = spec.IntervalMS, spec.OffsetMS
		maxJitter = spec.IntervalMS
	}
	if spec.JitterMS < 0 || spec.JitterMS > maxJitter {
		return nil, fault.ParamErrorf("spec.jitter_ms", "spec.jitter_ms must be from 0 to %d", maxJitter)
	}
	c.jitter = spec.JitterMS
	if !c.start.IsZero() && !c.end.IsZero() && c.end.Before(c.start) {
		return nil, fault.ParamErrorf("spec.end_at", "spec.end_at is before spec.start_at")
	}
	if c.cron != nil && c.end.IsZero() {
		if _, ok := c.next(time.Now()); !ok {
			return nil, fault.ParamErrorf("spec.cron", "spec.cron %q never fires", spec.Cron)
		}
	}
	return c, nil
}

// next returns the first nominal tick strictly after after, within the
// start and the end, and false when there is none.
func (c *tickSpec) next(after time.Time) (time.Time, bool) {
	after = after.UTC().Truncate(time.Millisecond)
	if !c.start.IsZero() && after.Before(c.start) {
		after = c.start.Add(-time.Millisecond)
	}
	var n time.Time
	if c.cron != nil {
		n = c.cron.Next(after.In(c.loc))
		// A local time that happens twice (the clocks go back) ticks at
		// its first instant only.
		if !n.IsZero() && sameWallMinute(after.In(c.loc), n) {
			n = c.cron.Next(n)
		}
		if n.IsZero() {
			return time.Time{}, false
		}
		n = n.UTC()
	} else {
		a := after.UnixMilli() - c.offset
		k := floorDiv(a, c.interval) + 1
		n = time.UnixMilli(k*c.interval + c.offset).UTC()
	}
	if !c.end.IsZero() && n.After(c.end) {
		return time.Time{}, false
	}
	return n, true
}

// sameWallMinute reports whether a and b, in one location, read the same
// date and minute on the wall clock.
func sameWallMinute(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd && a.Hour() == b.Hour() && a.Minute() == b.Minute()
}

// floorDiv is a/b rounded toward minus infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// jitterOf is the jitter of the tick at nominal: from 0 to c.jitter
// milliseconds, fixed by the schedule id and the nominal time.
func (c *tickSpec) jitterOf(nominal time.Time) time.Duration {
	if c.jitter == 0 {
		return 0
	}
	h := sha256.Sum256([]byte(c.id + "@" + strconv.FormatInt(nominal.UnixMilli(), 10)))
	return time.Duration(binary.BigEndian.Uint64(h[:8])%uint64(c.jitter+1)) * time.Millisecond
}

// due is when the tick at nominal falls due: nominal plus its jitter.
func (c *tickSpec) due(nominal time.Time) time.Time { return nominal.Add(c.jitterOf(nominal)) }

// skipTo moves a cursor over the ticks that fell due before cutoff, for
// an interval spec at once: it returns the new cursor and how many ticks
// it passed. A cron spec returns the cursor unchanged (the pass walks
// its ticks).
func (c *tickSpec) skipTo(cursor, cutoff time.Time) (time.Time, int64) {
	if c.cron != nil {
		return cursor, 0
	}
	// The ticks whose nominal time is before cutoff less the largest
	// jitter are due before cutoff whatever their jitter.
	limit := cutoff.Add(-time.Duration(c.jitter) * time.Millisecond)
	first, ok := c.next(cursor)
	if !ok || !first.Before(limit) {
		return cursor, 0
	}
	last := limit.Add(-time.Millisecond)
	if !c.end.IsZero() && last.After(c.end) {
		last = c.end
	}
	k0 := floorDiv(first.UnixMilli()-c.offset, c.interval)
	k1 := floorDiv(last.UnixMilli()-c.offset, c.interval)
	if k1 < k0 {
		return cursor, 0
	}
	return time.UnixMilli(k1*c.interval + c.offset).UTC(), k1 - k0 + 1
}

// tickKey is the key of the tick at nominal (store.ScheduleRun.Key): its
// time in RFC 3339, UTC.
func tickKey(nominal time.Time) string { return nominal.UTC().Format(time.RFC3339Nano) }

// triggerKey is the key of a run triggered at t.
func triggerKey(t time.Time) string { return "trigger-" + t.UTC().Format(time.RFC3339Nano) }
