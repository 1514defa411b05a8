package store

import "time"

// Module is one deployed version of a module. The module file stays on disk,
// content-addressed by its digest; the store keeps its metadata (persistence
// §11.1: model files stay outside the database).
type Module struct {
	// Name is the module name.
	Name string
	// Version counts the deployments of the name from 1.
	Version int
	// Digest is "sha256:" followed by 64 lowercase hex digits.
	Digest string
	// Size is the file size in bytes.
	Size int64
	// Functions are the exported functions.
	Functions []Function
	// CreatedAt is when the version was deployed.
	// Millisecond precision, UTC.
	CreatedAt time.Time
}

// Function is one function a module exports.
type Function struct {
	// Name is the function name.
	Name string `json:"name"`
	// Kind is activity or workflow.
	Kind Kind `json:"kind"`
}

// ModuleInsertParams are the params of Store.ModuleInsert.
type ModuleInsertParams struct {
	// Name is the module name: 1 to 128 characters of letters, digits, '-',
	// '_' and '.', starting with a letter or digit. Required.
	Name string
	// Digest is "sha256:<64 lowercase hex>". Required.
	Digest string
	// Size is the file size. Required (positive).
	Size int64
	// Functions are the exported functions. Defaults to none.
	Functions []Function
}
