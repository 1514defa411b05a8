package valuebench

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// corpusJSON is avro-value-benchmark-v1.json, the shared corpus of the
// Durable Workflow SDK benchmarks, byte for byte (reference §2.4).
//
//go:embed avro-value-benchmark-v1.json
var corpusJSON []byte

// CorpusSHA256 is the SHA-256 of the corpus file every SDK benchmark pins
// (reference §2.4).
const CorpusSHA256 = "588771404977f2a95fe7d8969c24a15e1c7dd78fe498af9aa2406f82be54b666"

// Corpus is the benchmark corpus: its schema and case names, the file's
// SHA-256, and the value the benchmark encodes, as a native value (see
// Object).
type Corpus struct {
	Schema string
	Case   string
	SHA256 string
	Value  any
}

// LoadCorpus checks the embedded corpus file against CorpusSHA256 and
// parses it.
func LoadCorpus() (Corpus, error) {
	sum := sha256.Sum256(corpusJSON)
	if got := hex.EncodeToString(sum[:]); got != CorpusSHA256 {
		return Corpus{}, fmt.Errorf("load corpus: sha256 %s, want %s", got, CorpusSHA256)
	}
	var head struct {
		Schema string          `json:"schema"`
		Case   string          `json:"case"`
		Value  json.RawMessage `json:"value"`
	}
	dec := json.NewDecoder(bytes.NewReader(corpusJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&head); err != nil {
		return Corpus{}, fmt.Errorf("load corpus: %w", err)
	}
	value, err := ParseJSON(head.Value)
	if err != nil {
		return Corpus{}, fmt.Errorf("load corpus: %w", err)
	}
	return Corpus{Schema: head.Schema, Case: head.Case, SHA256: CorpusSHA256, Value: value}, nil
}
