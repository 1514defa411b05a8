package valuebench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"time"

	"github.com/weft-run/weft/codec"
)

// Config configures a benchmark run.
type Config struct {
	// Iterations is the number of operations per sample of each path, as
	// the Rust SDK counts them. Defaults to 2000.
	Iterations int
	// Samples is the number of samples per path; the report gives their
	// median, as the Rust SDK does. Defaults to 5.
	Samples int
	// EncodeBudgetUS is the budget of the typed encode median, in
	// microseconds (the Rust SDK's AVRO_VALUE_ENCODE_BUDGET_US). Defaults
	// to 75.
	EncodeBudgetUS float64
	// DecodeBudgetUS is the budget of the typed decode median, in
	// microseconds (the Rust SDK's AVRO_VALUE_DECODE_BUDGET_US). Defaults
	// to 60.
	DecodeBudgetUS float64
	// Enforce records in the report that the caller fails the run when a
	// budget is exceeded; Run itself behaves the same. Defaults to false.
	Enforce bool
}

// Defaults of Config.
const (
	DefaultIterations     = 2000
	DefaultSamples        = 5
	DefaultEncodeBudgetUS = 75
	DefaultDecodeBudgetUS = 60
)

// chunk is how many operations of one path run back to back before the
// next path takes its turn. Paths interleave within every sample, so
// machine noise and garbage collection hit all of them alike.
const chunk = 100

// Run measures the benchmark (reference §5) on the embedded corpus: the
// sizes of compact JSON, the retired JSON-in-Avro wrapper and the typed
// Value, and the latency of encoding and decoding each, plus hamba/avro's
// generic API on the same value, all in one interleaved run.
//
// Before measuring, Run checks every path: the sizes must equal
// PublishedSizes, the typed frame's SHA-256 must equal TypedWireSHA256, and
// each decode path must give back the corpus value (in any map order for
// hamba). Any mismatch is an error, not a report. Run stops early with
// ctx's error when ctx is done.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	corpus, err := LoadCorpus()
	if err != nil {
		return nil, err
	}
	s, err := newSuite(corpus.Value)
	if err != nil {
		return nil, err
	}
	r := &Report{
		Implementation: Implementation,
		Corpus:         CorpusInfo{Schema: corpus.Schema, Case: corpus.Case, SHA256: corpus.SHA256},
		Iterations:     cfg.Iterations,
		Samples:        cfg.Samples,
		Runtime: RuntimeInfo{
			Go:         runtime.Version(),
			Platform:   runtime.GOOS + "/" + runtime.GOARCH,
			GOMAXPROCS: runtime.GOMAXPROCS(0),
		},
		BudgetsUS: Budgets{Encode: cfg.EncodeBudgetUS, Decode: cfg.DecodeBudgetUS},
		Paths:     pathDocs,
	}
	if err := s.check(r); err != nil {
		return nil, fmt.Errorf("check paths: %w", err)
	}
	samples, err := measure(ctx, s.ops(), cfg.Iterations, cfg.Samples)
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	for name, xs := range samples {
		*r.LatencyUS.byName(name) = Latency{MedianUS: round(median(xs)), SamplesUS: roundAll(xs)}
	}
	r.judge(cfg)
	return r, nil
}

// withDefaults fills zero fields and rejects negative ones.
func (c Config) withDefaults() (Config, error) {
	if c.Iterations < 0 || c.Samples < 0 || c.EncodeBudgetUS < 0 || c.DecodeBudgetUS < 0 {
		return c, errors.New("valuebench: negative iterations, samples or budget")
	}
	if c.Iterations == 0 {
		c.Iterations = DefaultIterations
	}
	if c.Samples == 0 {
		c.Samples = DefaultSamples
	}
	if c.EncodeBudgetUS == 0 {
		c.EncodeBudgetUS = DefaultEncodeBudgetUS
	}
	if c.DecodeBudgetUS == 0 {
		c.DecodeBudgetUS = DefaultDecodeBudgetUS
	}
	return c, nil
}

// check fills the report's sizes and wire contract from the paths' real
// output and verifies them and every round trip.
func (s *suite) check(r *Report) error {
	typedFrame, err := codecFrame(s.typed)
	if err != nil {
		return err
	}
	jsonEnv, err := marshalJSONEnvelope(string(s.json))
	if err != nil {
		return err
	}
	var wrapperEnv JSONEnvelope
	if err := json.Unmarshal(s.wrapper, &wrapperEnv); err != nil {
		return err
	}
	wrapperFrame, err := strictBase64.DecodeString(wrapperEnv.Blob)
	if err != nil {
		return err
	}
	r.SizesBytes = Sizes{
		PlainJSON:       PlainJSONSizes{Raw: len(s.json), HTTPEnvelope: len(jsonEnv)},
		OldJSONWrapper:  OldJSONWrapperSizes{RawDatum: len(wrapperFrame) - 1, Framed: len(wrapperFrame), HTTPEnvelope: len(s.wrapper)},
		FixedTypedValue: FixedTypedValueSizes{RawDatum: len(typedFrame) - codec.HeaderSize, SingleObject: len(typedFrame), HTTPEnvelope: len(s.typed)},
	}
	if r.SizesBytes != PublishedSizes {
		return fmt.Errorf("sizes %+v differ from the published %+v", r.SizesBytes, PublishedSizes)
	}
	sum := sha256.Sum256(typedFrame)
	r.WireContract = WireContract{TypedWireSHA256: hex.EncodeToString(sum[:])}
	if r.WireContract.TypedWireSHA256 != TypedWireSHA256 {
		return fmt.Errorf("typed frame sha256 %s, want %s", r.WireContract.TypedWireSHA256, TypedWireSHA256)
	}
	r.WireContract.Passed = true

	for _, rt := range []struct {
		name    string
		decode  func() (any, error)
		ordered bool
	}{
		{PlainJSONDecode, s.plainJSONDecode, true},
		{OldJSONWrapperDecode, s.oldWrapperDecode, true},
		{FixedTypedValueDecode, s.typedDecode, true},
		{HambaGenericDecode, s.hambaDecode, false},
	} {
		got, err := rt.decode()
		if err != nil {
			return fmt.Errorf("%s: %w", rt.name, err)
		}
		want := s.native
		if !rt.ordered {
			got, want = sortedNative(got), sortedNative(want)
		}
		if !reflect.DeepEqual(want, got) {
			return fmt.Errorf("%s does not give back the corpus value", rt.name)
		}
	}
	// A decoded typed value encodes to the same bytes again.
	back, err := s.typedDecode()
	if err != nil {
		return err
	}
	again, err := (&suite{native: back}).typedEncode()
	if err != nil {
		return err
	}
	if string(again) != string(s.typed) {
		return errors.New("typed value does not re-encode to the same envelope")
	}
	// hamba's frame holds the same value as ours.
	hambaFrame, err := codecFrame(s.hambaEnv)
	if err != nil {
		return err
	}
	hv, err := codec.DecodeFrame(hambaFrame)
	if err != nil {
		return fmt.Errorf("codec decode of hamba frame: %w", err)
	}
	if !reflect.DeepEqual(sortedNative(s.native), sortedNative(FromValue(hv))) {
		return errors.New("hamba frame does not hold the corpus value")
	}
	return nil
}

// codecFrame returns the frame inside an avro envelope.
func codecFrame(envelope []byte) ([]byte, error) {
	env, err := codec.ParseEnvelope(envelope)
	if err != nil {
		return nil, err
	}
	return env.Frame()
}

// judge fills the ratios and the enforcement verdict from the latencies.
func (r *Report) judge(cfg Config) {
	l := &r.LatencyUS
	ratio := func(typed, other Latency, target float64) Ratio {
		x := math.Inf(1)
		if other.MedianUS > 0 {
			x = typed.MedianUS / other.MedianUS
		}
		return Ratio{Ratio: math.Round(x*1000) / 1000, Target: target, Passed: x <= target}
	}
	r.Ratios = Ratios{
		EncodeVsPlainJSON:    ratio(l.FixedTypedValueEncode, l.PlainJSONEncode, TargetEncodeVsPlainJSON),
		EncodeVsHambaGeneric: ratio(l.FixedTypedValueEncode, l.HambaGenericEncode, TargetEncodeVsHambaGeneric),
		DecodeVsPlainJSON:    ratio(l.FixedTypedValueDecode, l.PlainJSONDecode, TargetDecodeVsPlainJSON),
		DecodeVsHambaGeneric: ratio(l.FixedTypedValueDecode, l.HambaGenericDecode, TargetDecodeVsHambaGeneric),
	}
	e := Enforcement{Enforced: cfg.Enforce, Failures: []string{}, RatioFailures: []string{}}
	if l.FixedTypedValueEncode.MedianUS > cfg.EncodeBudgetUS {
		e.Failures = append(e.Failures, fmt.Sprintf("%s median %.3f us exceeds the %g us budget", FixedTypedValueEncode, l.FixedTypedValueEncode.MedianUS, cfg.EncodeBudgetUS))
	}
	if l.FixedTypedValueDecode.MedianUS > cfg.DecodeBudgetUS {
		e.Failures = append(e.Failures, fmt.Sprintf("%s median %.3f us exceeds the %g us budget", FixedTypedValueDecode, l.FixedTypedValueDecode.MedianUS, cfg.DecodeBudgetUS))
	}
	for _, c := range []struct {
		name  string
		ratio Ratio
	}{
		{"fixed_typed_value_encode / plain_json_encode", r.Ratios.EncodeVsPlainJSON},
		{"fixed_typed_value_encode / hamba_generic_encode", r.Ratios.EncodeVsHambaGeneric},
		{"fixed_typed_value_decode / plain_json_decode", r.Ratios.DecodeVsPlainJSON},
		{"fixed_typed_value_decode / hamba_generic_decode", r.Ratios.DecodeVsHambaGeneric},
	} {
		if !c.ratio.Passed {
			e.RatioFailures = append(e.RatioFailures, fmt.Sprintf("%s = %.3f exceeds the %g target", c.name, c.ratio.Ratio, c.ratio.Target))
		}
	}
	e.Passed = len(e.Failures) == 0
	e.RatioTargetsPassed = len(e.RatioFailures) == 0
	r.Enforcement = e
}

// measure runs every op iterations times per sample and returns, per op
// name, the microseconds per operation of each sample. Within a sample the
// ops take turns in chunks, starting from a different op each turn.
func measure(ctx context.Context, ops []op, iterations, samples int) (map[string][]float64, error) {
	// Warm up caches, pools and the heap before timing.
	for _, o := range ops {
		for range min(iterations, chunk) {
			if err := o.run(); err != nil {
				return nil, fmt.Errorf("%s: %w", o.name, err)
			}
		}
	}
	out := make(map[string][]float64, len(ops))
	for smp := range samples {
		elapsed := make([]time.Duration, len(ops))
		for done, turn := 0, 0; done < iterations; turn++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			n := min(chunk, iterations-done)
			for i := range ops {
				o := ops[(i+turn+smp)%len(ops)]
				start := time.Now()
				for range n {
					if err := o.run(); err != nil {
						return nil, fmt.Errorf("%s: %w", o.name, err)
					}
				}
				elapsed[(i+turn+smp)%len(ops)] += time.Since(start)
			}
			done += n
		}
		for i, o := range ops {
			out[o.name] = append(out[o.name], float64(elapsed[i].Nanoseconds())/1e3/float64(iterations))
		}
	}
	return out, nil
}

// median returns the median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// round rounds microseconds to nanoseconds.
func round(us float64) float64 { return math.Round(us*1000) / 1000 }

func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = round(x)
	}
	return out
}
