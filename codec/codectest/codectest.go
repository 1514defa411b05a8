// Package codectest reads the shared conformance vectors of the Avro Value
// protocol (the folder shared/conformance beside the repository) for the
// tests of package codec and of the packages built on it, so that each
// reads them one way. It uses the standard library only.
package codectest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// GoldenFile is the name of the golden vectors in the conformance folder.
const GoldenFile = "avro-value-v1-golden.json"

// Golden is avro-value-v1-golden.json (Avro Value protocol reference §2.2).
type Golden struct {
	Schema      string `json:"schema"`
	Fingerprint string `json:"fingerprint"`
	MagicHex    string `json:"magic_hex"`
	Cases       []struct {
		Name        string          `json:"name"`
		Kind        string          `json:"kind"`
		Value       json.RawMessage `json:"value"`
		ValueBase64 string          `json:"value_base64"`
		WireBase64  string          `json:"wire_base64"`
	} `json:"cases"`
	AlternateMapOrders []struct {
		Name       string   `json:"name"`
		WireBase64 []string `json:"wire_base64"`
	} `json:"alternate_map_orders"`
	MalformedFrames []struct {
		Name       string `json:"name"`
		Error      string `json:"error"`
		WireBase64 string `json:"wire_base64"`
	} `json:"malformed_frames"`
}

// Dir returns the conformance folder: shared/conformance beside the
// directory that holds go.mod, found upward from the working directory
// (go test runs a package's tests in its directory).
func Dir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("conformance folder: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "conformance")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("conformance folder: no go.mod above the working directory")
		}
		dir = parent
	}
}

// ReadFile reads the file name (slash-separated) of the conformance folder.
func ReadFile(tb testing.TB, name string) []byte {
	tb.Helper()
	dir := Dir(tb)
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		tb.Fatalf("the conformance vectors live in %s: %v", dir, err)
	}
	return data
}

// LoadGolden reads and parses the golden vectors; a field the type does
// not know, or a file without cases or malformed frames, fails the test.
func LoadGolden(tb testing.TB) Golden {
	tb.Helper()
	var g Golden
	dec := json.NewDecoder(bytes.NewReader(ReadFile(tb, GoldenFile)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		tb.Fatalf("%s: %v", GoldenFile, err)
	}
	if len(g.Cases) == 0 || len(g.MalformedFrames) == 0 {
		tb.Fatalf("%s holds no cases or no malformed frames", GoldenFile)
	}
	return g
}
