package guest

import (
	"fmt"
	"unicode/utf8"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// Handler runs one registered function on its decoded input.
type Handler func(input codec.Value) (codec.Value, error)

// Frame is a Value still in its single-object frame. A function that takes
// and returns a Frame skips decoding and encoding: it suits functions that
// pass payloads through without looking inside. An input Frame is valid
// only until the function returns (it lives in the host's buffer); copy
// what you keep. A returned Frame is validated by the host.
type Frame []byte

// FrameHandler runs one registered function on its raw input frame.
type FrameHandler func(input Frame) (Frame, error)

type function struct {
	name    string
	kind    abi.Kind
	handler Handler
	frame   FrameHandler
}

var (
	registry = map[string]*function{}
	order    []*function // registration order, the manifest's order
	manifest []byte      // the encoded manifest, built on first use
)

// Register adds a function. It panics on an empty, over-long or duplicate
// name, or once the manifest was read: registration belongs in init
// functions, which run before the host reads the manifest.
func Register(name string, kind abi.Kind, h Handler) {
	register(&function{name: name, kind: kind, handler: h}, h == nil)
}

// RegisterFrame adds a function that works on frames; it panics like
// Register.
func RegisterFrame(name string, kind abi.Kind, h FrameHandler) {
	register(&function{name: name, kind: kind, frame: h}, h == nil)
}

func register(f *function, nilHandler bool) {
	name := f.name
	switch {
	case manifest != nil:
		panic(fmt.Sprintf("weft: register %q after the manifest was read; register in an init function", name))
	case name == "" || len(name) > abi.MaxNameLen || !utf8.ValidString(name):
		panic(fmt.Sprintf("weft: invalid function name %q (1 to %d bytes of UTF-8)", name, abi.MaxNameLen))
	case registry[name] != nil:
		panic(fmt.Sprintf("weft: function %q registered twice", name))
	case nilHandler:
		panic(fmt.Sprintf("weft: function %q has a nil handler", name))
	}
	registry[name] = f
	order = append(order, f)
}

// Manifest returns the manifest frame (docs/abi.md, "Manifest"): the map
// {abi_version, functions: [{name, kind}]} in registration order.
func Manifest() []byte {
	if manifest != nil {
		return manifest
	}
	fns := make([]codec.Value, len(order))
	for i, f := range order {
		fns[i] = codec.Map(
			codec.Entry{Key: abi.ManifestName, Value: codec.String(f.name)},
			codec.Entry{Key: abi.ManifestKind, Value: codec.String(string(f.kind))},
		)
	}
	m, err := codec.EncodeFrame(codec.Map(
		codec.Entry{Key: abi.ManifestABIVersion, Value: codec.Long(abi.Version)},
		codec.Entry{Key: abi.ManifestFunctions, Value: codec.List(fns...)},
	))
	if err != nil {
		panic("weft: encode manifest: " + err.Error())
	}
	manifest = m
	return manifest
}
