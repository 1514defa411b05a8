package host

import (
	"unicode/utf8"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
)

// parseManifest checks a manifest frame (docs/abi.md, "Manifest") and
// returns its functions. Failures are invalid_manifest, or abi_mismatch for
// another abi_version.
func parseManifest(frame []byte, limits codec.Limits) ([]Function, error) {
	v, err := codec.DecodeFrameLimits(frame, limits)
	if err != nil {
		return nil, wrapf(abi.CodeInvalidManifest, err, "the manifest from weft_manifest is not a valid Value frame")
	}
	if v.Kind() != codec.KindMap {
		return nil, errorf(abi.CodeInvalidManifest, "the manifest is a %s; it must be a map {abi_version, functions}", v.Kind())
	}
	ver, ok := v.Get(abi.ManifestABIVersion)
	n, isLong := ver.AsLong()
	switch {
	case !ok || !isLong:
		return nil, errorf(abi.CodeInvalidManifest, "the manifest has no long field %q", abi.ManifestABIVersion)
	case n != abi.Version:
		return nil, errorf(abi.CodeABIMismatch, "the manifest says weft ABI v%d; this host speaks v%d: rebuild the plugin with a matching SDK", n, abi.Version)
	}
	list, ok := v.Get(abi.ManifestFunctions)
	if !ok || list.Kind() != codec.KindList {
		return nil, errorf(abi.CodeInvalidManifest, "the manifest has no list field %q", abi.ManifestFunctions)
	}
	switch {
	case list.Len() == 0:
		return nil, errorf(abi.CodeInvalidManifest, "the manifest lists no functions: register at least one activity or workflow")
	case list.Len() > abi.MaxManifestFunctions:
		return nil, errorf(abi.CodeInvalidManifest, "the manifest lists %d functions; the most is %d", list.Len(), abi.MaxManifestFunctions)
	}
	fns := make([]Function, 0, list.Len())
	seen := make(map[string]bool, list.Len())
	for i, item := range list.Items() {
		if item.Kind() != codec.KindMap {
			return nil, errorf(abi.CodeInvalidManifest, "manifest functions[%d] is a %s, not a map {name, kind}", i, item.Kind())
		}
		nv, _ := item.Get(abi.ManifestName)
		name, ok := nv.AsString()
		switch {
		case !ok:
			return nil, errorf(abi.CodeInvalidManifest, "manifest functions[%d] has no string field %q", i, abi.ManifestName)
		case name == "" || len(name) > abi.MaxNameLen || !utf8.ValidString(name):
			return nil, errorf(abi.CodeInvalidManifest, "manifest functions[%d] has the name %q; a name is 1 to %d bytes of UTF-8", i, name, abi.MaxNameLen)
		case seen[name]:
			return nil, errorf(abi.CodeInvalidManifest, "manifest functions[%d]: the name %q appears twice", i, name)
		}
		kv, _ := item.Get(abi.ManifestKind)
		kind, _ := kv.AsString()
		if !abi.Kind(kind).Valid() {
			return nil, errorf(abi.CodeInvalidManifest, "manifest function %q has the kind %q; want %q or %q", name, kind, abi.KindActivity, abi.KindWorkflow)
		}
		seen[name] = true
		fns = append(fns, Function{Name: name, Kind: abi.Kind(kind)})
	}
	return fns, nil
}
