package guest

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/weft-run/weft/codec"
	"github.com/weft-run/weft/sdk-wasm/abi"
	"github.com/weft-run/weft/sdk-wasm/internal/hostcall"
)

// queries are the query handlers the running workflow call registered, by
// name; answerQuery takes them at the end of the call.
var queries map[string]Handler

// answer is answerQuery once a query handler was ever registered, and nil
// before: a module that never registers one never calls query_request, so
// the linker leaves the import out of it.
var answer func() (abi.Status, bool)

// SetQuery registers the query handler h under name for the rest of the
// running workflow call, replacing one of the same name. It returns an
// error for a bad name or a nil handler.
func SetQuery(name string, h Handler) error {
	switch {
	case name == "" || len(name) > abi.MaxNameLen || !utf8.ValidString(name):
		return fmt.Errorf("weft: invalid query name %q (1 to %d bytes of UTF-8)", name, abi.MaxNameLen)
	case h == nil:
		return fmt.Errorf("weft: query %q has a nil handler", name)
	}
	if queries == nil {
		queries = map[string]Handler{}
	}
	queries[name] = h
	answer = answerQuery
	return nil
}

// answerQuery runs at the end of every workflow call once a handler was
// ever registered: it takes the call's handlers and, when the call answers
// a query, runs its handler and hands over the answer; it reports whether
// it did.
func answerQuery() (abi.Status, bool) {
	hs := queries
	queries = nil
	frame, ok := hostcall.QueryRequest()
	if !ok {
		return 0, false
	}
	v, err := codec.DecodeFrame(frame)
	if err != nil {
		return fail(&ApplicationError{Type: "weft.invalid_input", Message: "query frame: " + err.Error(), NonRetryable: true}), true
	}
	var name string
	input := codec.Null()
	for _, e := range v.Entries() {
		switch e.Key {
		case abi.QueryName:
			name, _ = e.Value.AsString()
		case abi.QueryInput:
			input = e.Value
		}
	}
	h := hs[name]
	if h == nil {
		names := make([]string, 0, len(hs))
		for n := range hs {
			names = append(names, n)
		}
		sort.Strings(names)
		have := "none"
		if len(names) > 0 {
			have = strings.Join(names, ", ")
		}
		return fail(&ApplicationError{
			Type: abi.ErrorTypeQueryNotFound, NonRetryable: true,
			Message: fmt.Sprintf("the workflow has no query handler %q; it has: %s", name, have),
		}), true
	}
	out, susp, err := run(h, input)
	switch {
	case susp:
		return fail(&ApplicationError{Type: "weft.query_suspended", Message: fmt.Sprintf("query handler %q waited on a future", name), NonRetryable: true}), true
	case err != nil:
		return fail(AsApplicationError(err)), true
	}
	return output(out), true
}
