// Package codectest reads the conformance vectors of the Avro Value
// protocol (codec/testdata/conformance, copied unchanged from the Durable
// Workflow SDKs and listed with their SHA-256 in its SHA256SUMS) for the
// tests of package codec and of the packages built on it, so that each
// reads them one way and checks them against the manifest first. It uses
// the standard library only.
package codectest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

// ManifestFile is the name of the manifest in the conformance folder: one
// line per file, the hex SHA-256, two spaces and the slash-separated path
// (the output of sha256sum).
const ManifestFile = "SHA256SUMS"

// Dir returns the conformance folder: codec/testdata/conformance under the
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
			return filepath.Join(dir, "codec", "testdata", "conformance")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatalf("conformance folder: no go.mod above the working directory")
		}
		dir = parent
	}
}

// ReadFile reads the file name (slash-separated) of the conformance folder
// and fails the test unless the manifest lists it with the SHA-256 of the
// bytes read: the vectors are data to be kept byte for byte.
func ReadFile(tb testing.TB, name string) []byte {
	tb.Helper()
	dir := Dir(tb)
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		tb.Fatalf("the conformance vectors live in %s: %v", dir, err)
	}
	want, ok := Manifest(tb)[name]
	if !ok {
		tb.Fatalf("%s is not listed in %s", name, ManifestFile)
	}
	if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != want {
		tb.Fatalf("%s has SHA-256 %x, but %s lists %s: the vectors must stay unchanged", name, got, ManifestFile, want)
	}
	return data
}

// Manifest reads the manifest: the hex SHA-256 of each file, by its
// slash-separated path in the conformance folder. A malformed line fails
// the test.
func Manifest(tb testing.TB) map[string]string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(tb), ManifestFile))
	if err != nil {
		tb.Fatalf("conformance manifest: %v", err)
	}
	sums := make(map[string]string)
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if b, err := hex.DecodeString(sum); !ok || err != nil || len(b) != sha256.Size || name == "" {
			tb.Fatalf("%s line %d is not \"<sha256>  <path>\": %q", ManifestFile, i+1, line)
		}
		sums[name] = sum
	}
	return sums
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
