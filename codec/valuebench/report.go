package valuebench

// Report is the result of one benchmark run. Its shape follows the Rust
// SDK's report (reference §5.1): implementation, corpus, iterations,
// sizes_bytes and latency_us, with samples next to each median as the
// Python SDK reports them; it adds hamba/avro's generic paths, the ratio
// targets, the budgets and the enforcement verdict.
type Report struct {
	Implementation string       `json:"implementation"`
	Corpus         CorpusInfo   `json:"corpus"`
	Iterations     int          `json:"iterations"`
	Samples        int          `json:"samples"`
	Runtime        RuntimeInfo  `json:"runtime"`
	SizesBytes     Sizes        `json:"sizes_bytes"`
	WireContract   WireContract `json:"wire_contract"`
	LatencyUS      Latencies    `json:"latency_us"`
	Ratios         Ratios       `json:"ratios"`
	BudgetsUS      Budgets      `json:"budgets_us"`
	Enforcement    Enforcement  `json:"enforcement"`
	// Paths says what each latency measures.
	Paths map[string]string `json:"paths"`
}

// Implementation is the report's implementation name.
const Implementation = "weft-go"

// CorpusInfo names the corpus a report measured.
type CorpusInfo struct {
	Schema string `json:"schema"`
	Case   string `json:"case"`
	SHA256 string `json:"sha256"`
}

// RuntimeInfo describes where the run happened.
type RuntimeInfo struct {
	Go         string `json:"go"`
	Platform   string `json:"platform"`
	GOMAXPROCS int    `json:"gomaxprocs"`
}

// Sizes are the byte sizes of the corpus value in each representation.
type Sizes struct {
	PlainJSON       PlainJSONSizes       `json:"plain_json"`
	OldJSONWrapper  OldJSONWrapperSizes  `json:"old_json_wrapper"`
	FixedTypedValue FixedTypedValueSizes `json:"fixed_typed_value"`
}

// PlainJSONSizes are the sizes of compact JSON: the text, and the
// {"codec":"json","blob":"<the text as a JSON string>"} envelope.
type PlainJSONSizes struct {
	Raw          int `json:"raw"`
	HTTPEnvelope int `json:"http_envelope"`
}

// OldJSONWrapperSizes are the sizes of the retired wrapper: the Payload
// datum, the datum after its 0x00 marker, and the envelope of its base64.
type OldJSONWrapperSizes struct {
	RawDatum     int `json:"raw_datum"`
	Framed       int `json:"framed"`
	HTTPEnvelope int `json:"http_envelope"`
}

// FixedTypedValueSizes are the sizes of the typed Value: the datum, the
// single-object frame, and the avro envelope.
type FixedTypedValueSizes struct {
	RawDatum     int `json:"raw_datum"`
	SingleObject int `json:"single_object"`
	HTTPEnvelope int `json:"http_envelope"`
}

// PublishedSizes are the sizes every SDK benchmark reports for the corpus
// (reference §5.2, EXPECTED_SIZES_BYTES). A run whose sizes differ fails.
var PublishedSizes = Sizes{
	PlainJSON:       PlainJSONSizes{Raw: 193, HTTPEnvelope: 249},
	OldJSONWrapper:  OldJSONWrapperSizes{RawDatum: 196, Framed: 197, HTTPEnvelope: 290},
	FixedTypedValue: FixedTypedValueSizes{RawDatum: 154, SingleObject: 164, HTTPEnvelope: 246},
}

// TypedWireSHA256 is the SHA-256 of the corpus value's typed frame with maps
// in insertion order, as the Python SDK's benchmark pins it (reference
// §2.4). A run whose frame differs fails.
const TypedWireSHA256 = "8e0ec373f4a8163830bc319cbc55e242e35bed2e7fd4dba2d7ba12fa62bd42e3"

// WireContract reports the typed frame's SHA-256 and whether it matched
// TypedWireSHA256.
type WireContract struct {
	TypedWireSHA256 string `json:"typed_wire_sha256"`
	Passed          bool   `json:"passed"`
}

// Latency is one path's cost per operation: the median of the samples, and
// the samples, in microseconds.
type Latency struct {
	MedianUS  float64   `json:"median_us"`
	SamplesUS []float64 `json:"samples_us"`
}

// Latencies holds the latency of every path (see the path name constants).
type Latencies struct {
	PlainJSONEncode       Latency `json:"plain_json_encode"`
	PlainJSONDecode       Latency `json:"plain_json_decode"`
	OldJSONWrapperEncode  Latency `json:"old_json_wrapper_encode"`
	OldJSONWrapperDecode  Latency `json:"old_json_wrapper_decode"`
	FixedTypedValueEncode Latency `json:"fixed_typed_value_encode"`
	FixedTypedValueDecode Latency `json:"fixed_typed_value_decode"`
	HambaGenericEncode    Latency `json:"hamba_generic_encode"`
	HambaGenericDecode    Latency `json:"hamba_generic_decode"`
}

// byName returns the field of path name, or nil.
func (l *Latencies) byName(name string) *Latency {
	switch name {
	case PlainJSONEncode:
		return &l.PlainJSONEncode
	case PlainJSONDecode:
		return &l.PlainJSONDecode
	case OldJSONWrapperEncode:
		return &l.OldJSONWrapperEncode
	case OldJSONWrapperDecode:
		return &l.OldJSONWrapperDecode
	case FixedTypedValueEncode:
		return &l.FixedTypedValueEncode
	case FixedTypedValueDecode:
		return &l.FixedTypedValueDecode
	case HambaGenericEncode:
		return &l.HambaGenericEncode
	case HambaGenericDecode:
		return &l.HambaGenericDecode
	}
	return nil
}

// Ratio compares the typed path's median with another path's, measured in
// the same run: Ratio is typed / other, and Passed is Ratio <= Target.
type Ratio struct {
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
	Passed bool    `json:"passed"`
}

// Ratios are the targets of the typed path against compact JSON and
// hamba/avro's generic API (issue 2, benchmark targets).
type Ratios struct {
	EncodeVsPlainJSON    Ratio `json:"fixed_typed_value_encode_vs_plain_json"`
	EncodeVsHambaGeneric Ratio `json:"fixed_typed_value_encode_vs_hamba_generic"`
	DecodeVsPlainJSON    Ratio `json:"fixed_typed_value_decode_vs_plain_json"`
	DecodeVsHambaGeneric Ratio `json:"fixed_typed_value_decode_vs_hamba_generic"`
}

// The ratio targets of the typed path.
const (
	TargetEncodeVsPlainJSON    = 0.5
	TargetEncodeVsHambaGeneric = 0.2
	TargetDecodeVsPlainJSON    = 0.5
	TargetDecodeVsHambaGeneric = 0.5
)

// Budgets are the absolute latency budgets of the typed path, in
// microseconds per operation.
type Budgets struct {
	Encode float64 `json:"encode"`
	Decode float64 `json:"decode"`
}

// Enforcement is the verdict of a run. Passed is false when the typed
// path's median is over a budget; Failures then says which. The ratio
// targets are reported apart: RatioTargetsPassed and RatioFailures.
// Enforced records whether the caller acts on Passed (weft bench
// --enforce exits 1 when it is false).
type Enforcement struct {
	Enforced           bool     `json:"enforced"`
	Passed             bool     `json:"passed"`
	Failures           []string `json:"failures"`
	RatioTargetsPassed bool     `json:"ratio_targets_passed"`
	RatioFailures      []string `json:"ratio_failures"`
}
