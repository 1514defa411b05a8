// Package preflight is the pre-deploy check of every stored payload (BRIEF
// §3.2; Durable Workflow reference §6): before weft starts on a data
// directory, each durable value the store holds must carry the codec tag
// "avro" and be a well-formed Avro Value v1 single-object frame (magic C3 01,
// fingerprint e2a33dff55802237, a datum that decodes).
//
// It inspects the durable value columns of tasks (input, checkpoint, output,
// error details) and the JSON documents the store keeps (event payloads,
// stored response bodies). Inside a document, durable values are
// {codec, blob} envelopes under keys ending in "_envelope"; a sibling key
// without the suffix ("output" beside "output_envelope") is the typed
// projection for people, and customer data, so it is not inspected.
//
// The check only reads. weft preflight prints its report and exits 1 on any
// finding; weft serve runs it first and refuses to start on a finding.
//
// # Usage
//
//	rep, err := preflight.Run(ctx, db, preflight.Config{})
//	if err != nil {
//		return err
//	}
//	rep.WriteText(os.Stdout)
//	if !rep.OK() {
//		os.Exit(1)
//	}
package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/store"
)

// ErrBlocked is the error of Report.Err: the scan found payloads that are
// not Avro Value v1 frames.
var ErrBlocked = errors.New("preflight blocked")

// Scanner is what the preflight needs from a store: a read-only walk over
// every stored payload. store.Store satisfies it.
type Scanner interface {
	PayloadScan(ctx context.Context, fn func(*store.ScannedPayload) error) error
}

// Config configures Run.
type Config struct {
	// MaxFindings caps the findings kept in the report; the rest are
	// counted. Defaults to 50.
	MaxFindings int
	// Limits bounds the frames checked. Defaults to codec.DefaultLimits.
	Limits codec.Limits
}

// Finding is one stored payload that would not decode.
type Finding struct {
	// Table, Row and Field locate the stored value, such as tasks,
	// task_01J…, input.
	Table, Row, Field string
	// Path is the JSON path of the envelope inside a document, such as
	// $.output_envelope; "" for a value column.
	Path string
	// Code is the codec error code of the problem.
	Code codec.Code
	// Diagnostic explains the problem.
	Diagnostic string
}

// Location returns "table[row].field" followed by the JSON path, if any.
func (f Finding) Location() string {
	loc := f.Table + "[" + f.Row + "]." + f.Field
	if f.Path != "" {
		loc += " " + f.Path
	}
	return loc
}

// String returns the finding on one line.
func (f Finding) String() string {
	return f.Location() + ": " + string(f.Code) + ": " + f.Diagnostic
}

// Report is the outcome of Run.
type Report struct {
	// Values counts the durable value columns inspected.
	Values int
	// Documents counts the JSON documents walked for envelopes.
	Documents int
	// Envelopes counts the envelopes inspected inside documents.
	Envelopes int
	// Findings holds the first Config.MaxFindings findings, in scan order.
	Findings []Finding
	// Total counts every finding, also those not kept.
	Total int
}

// OK reports whether the scan found nothing.
func (r *Report) OK() bool { return r.Total == 0 }

// Run scans every payload s holds and returns the report. It returns an
// error only when the scan itself fails; findings are in the report.
func Run(ctx context.Context, s Scanner, cfg Config) (*Report, error) {
	if cfg.MaxFindings <= 0 {
		cfg.MaxFindings = 50
	}
	c := &checker{cfg: cfg, rep: &Report{}}
	if err := s.PayloadScan(ctx, c.scanned); err != nil {
		return nil, fmt.Errorf("preflight: %w", err)
	}
	return c.rep, nil
}

type checker struct {
	cfg Config
	rep *Report
	sp  *store.ScannedPayload // the value being checked
}

func (c *checker) add(path string, err error) {
	c.rep.Total++
	if len(c.rep.Findings) >= c.cfg.MaxFindings {
		return
	}
	code := codec.ErrorCode(err)
	if code == "" {
		code = codec.CodeInvalidPayloadEnvelope
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, string(code)+": ")
	c.rep.Findings = append(c.rep.Findings, Finding{
		Table: c.sp.Table, Row: c.sp.Row, Field: c.sp.Field, Path: path, Code: code, Diagnostic: msg,
	})
}

func (c *checker) scanned(sp *store.ScannedPayload) error {
	c.sp = sp
	if sp.Document != nil {
		c.rep.Documents++
		c.document(sp.Document)
		return nil
	}
	c.rep.Values++
	if err := c.frame(sp.Payload.Codec, sp.Payload.Data); err != nil {
		c.add("", err)
	}
	return nil
}

// frame checks one stored value: the codec tag first, then the frame.
func (c *checker) frame(tag string, data []byte) error {
	if tag == "" {
		return &codec.Error{
			Code:    codec.CodeUnsupportedPayloadCodec,
			Message: "a stored durable value has no codec tag; every durable value must be tagged avro",
		}
	}
	if err := codec.CheckCodec(tag); err != nil {
		return err
	}
	if len(data) == 0 {
		return &codec.Error{Code: codec.CodeInvalidPayloadFraming, Message: "empty payload"}
	}
	return codec.ValidateFrame(data, c.cfg.Limits)
}

// document walks a JSON document and checks every envelope slot.
func (c *checker) document(doc json.RawMessage) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return
	}
	if !json.Valid(doc) {
		c.add("", &codec.Error{Code: codec.CodeInvalidPayloadEnvelope, Message: "stored document is not valid JSON"})
		return
	}
	c.walk(doc, "$")
}

func (c *checker) walk(raw json.RawMessage, path string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	switch raw[0] {
	case '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return // valid JSON, checked above; a duplicate key at worst
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "." + k
			if strings.HasSuffix(k, "_envelope") {
				c.envelope(obj[k], p)
				continue
			}
			if _, projected := obj[k+"_envelope"]; projected {
				continue // the typed projection of an envelope: data, not inspected
			}
			c.walk(obj[k], p)
		}
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return
		}
		for i, it := range items {
			c.walk(it, path+"["+strconv.Itoa(i)+"]")
		}
	}
}

// envelope checks the value of one envelope slot.
func (c *checker) envelope(raw json.RawMessage, path string) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return
	}
	c.rep.Envelopes++
	env, err := codec.ParseEnvelope(raw)
	if err != nil {
		c.add(path, err)
		return
	}
	frame, err := env.Frame()
	if err != nil {
		c.add(path, err)
		return
	}
	if err := c.frame(env.Codec, frame); err != nil {
		c.add(path, err)
	}
}

// WriteText writes the report for people: a summary line and, on findings,
// one line per kept finding and what to do.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.OK() {
		fmt.Fprintf(&b, "preflight passed: %d stored value(s) and %d envelope(s) in %d document(s) are Avro Value v1 frames\n",
			r.Values, r.Envelopes, r.Documents)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "%s: preflight blocked: %d stored payload(s) are not Avro Value v1 frames (%d value(s), %d envelope(s) in %d document(s) inspected)\n",
		codec.CodeUnsupportedPayloadCodec, r.Total, r.Values, r.Envelopes, r.Documents)
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	if more := r.Total - len(r.Findings); more > 0 {
		fmt.Fprintf(&b, "  … and %d more\n", more)
	}
	b.WriteString(`
weft starts only when every stored durable value is an Avro Value v1 frame
tagged "avro" (fingerprint crc64-avro:e2a33dff55802237). Finish or export the
tasks listed above with the weft version that wrote them, re-encode their
payloads to the v1 schema, and run weft preflight again. Nothing was changed;
keep the event history.
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// Err returns the report as an error wrapping ErrBlocked when it has
// findings, for callers such as weft serve that refuse to start; nil when
// it is OK.
func (r *Report) Err() error {
	if r.OK() {
		return nil
	}
	first := r.Findings[0]
	return fmt.Errorf("%w: preflight found %d stored payload(s) that are not Avro Value v1 frames, first %s",
		ErrBlocked, r.Total, first)
}
