package abi

// Code is the snake_case code of a call or deploy that the host failed, as
// opposed to an application error the guest returned through set_error
// (docs/abi.md, "Failure codes"). Code implements error, so
// errors.Is(err, abi.CodeTrap) works on the host's errors.
type Code string

// Failure codes of a call.
const (
	// CodeTrap: the guest trapped (unreachable, out-of-bounds access of its
	// own memory, stack overflow, division by zero, ...).
	CodeTrap Code = "trap"
	// CodeExited: the guest called WASI proc_exit.
	CodeExited Code = "exited"
	// CodeTimeout: the call ran past its wall-clock timeout and was stopped.
	CodeTimeout Code = "timeout"
	// CodeCancelled: the call's context was cancelled and the guest stopped.
	CodeCancelled Code = "cancelled"
	// CodeMemoryLimit: the guest needed more memory than the call's limit.
	CodeMemoryLimit Code = "memory_limit"
	// CodeBadBlob: a frame the guest handed over failed validation (magic,
	// fingerprint, depth, size or value rules), or an error value lacks its
	// type.
	CodeBadBlob Code = "bad_blob"
	// CodeBadPointer: a pointer and length from the guest fall outside its
	// memory or overflow.
	CodeBadPointer Code = "bad_pointer"
	// CodeABIViolation: the guest broke a rule of the call protocol, for
	// example returned StatusOK without calling set_output, or an unknown
	// status.
	CodeABIViolation Code = "abi_violation"
	// CodeImportNotAllowed: an activity called a workflow-only import, or a
	// workflow an activity-only one.
	CodeImportNotAllowed Code = "import_not_allowed"
	// CodeHookFailed: the embedder's hook behind an import (checkpoint
	// storage, the workflow journal) failed; the hook's error is wrapped.
	CodeHookFailed Code = "hook_failed"
	// CodeFunctionNotFound: the manifest lists no function of that name.
	CodeFunctionNotFound Code = "function_not_found"
	// CodeInvalidInput: the caller's input is not a Value frame.
	CodeInvalidInput Code = "invalid_input"
	// CodeModuleNotFound: the host has no module of that digest and the
	// request gave no way to load it.
	CodeModuleNotFound Code = "module_not_found"
	// CodeHostClosed: the host was closed.
	CodeHostClosed Code = "host_closed"
	// CodeQueryCommand: a query handler called a workflow command (an
	// activity, a timer, a signal wait, an await): a query only reads.
	CodeQueryCommand Code = "query_command"
	// CodeQueryNotSupported: a query call ended without asking for its
	// query (query_request): the workflow registered no query handler.
	CodeQueryNotSupported Code = "query_not_supported"
)

// Failure codes of a deploy (Compile), which also fail a call that has to
// compile its module first.
const (
	// CodeInvalidModule: the bytes are not a valid WebAssembly module, do not
	// match their digest, are a WASI command instead of a reactor, or import
	// something the host does not provide.
	CodeInvalidModule Code = "invalid_module"
	// CodeMissingExport: a required export is missing or has the wrong
	// signature.
	CodeMissingExport Code = "missing_export"
	// CodeABIMismatch: the guest speaks another ABI version.
	CodeABIMismatch Code = "abi_mismatch"
	// CodeInvalidManifest: the manifest is not a valid frame or does not
	// have the documented shape.
	CodeInvalidManifest Code = "invalid_manifest"
)

// Error returns the code itself.
func (c Code) Error() string { return string(c) }
