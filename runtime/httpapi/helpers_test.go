package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/weft-run/weft/runtime/httpapi/client"
)

// listDoc is a page of a list, as the tests decode it.
type listDoc[T any] = client.List[T]

type testingTB = testing.TB

// tbWriter writes log lines through tb.Log.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testLogger returns a logger that writes through tb.Log.
func testLogger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: tbWriter{tb}})
}

// doToken sends a request with token as bearer (none when empty) and returns
// the response; its body is closed at cleanup.
func doToken(tb testing.TB, token, method, url, body string, header http.Header) *http.Response {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(tb.Context(), method, url, rd)
	require.NoError(tb, err)
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(tb, err)
	tb.Cleanup(func() { resp.Body.Close() })
	return resp
}

// MustReadBody reads the whole response body.
func MustReadBody(tb testing.TB, resp *http.Response) []byte {
	tb.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return b
}

// MustDecode reads the response body as JSON into a value of type T, and
// checks the status.
func MustDecode[T any](tb testing.TB, resp *http.Response, status int) T {
	tb.Helper()
	body := MustReadBody(tb, resp)
	require.Equal(tb, status, resp.StatusCode, "body: %s", body)
	var v T
	require.NoError(tb, json.Unmarshal(body, &v), "body: %s", body)
	return v
}

// apiError is the error body as a client sees it.
type apiError struct {
	Error struct {
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// MustError checks that resp is a JSON error with status and code, and
// returns it.
func MustError(tb testing.TB, resp *http.Response, status int, code string) apiError {
	tb.Helper()
	e := MustDecode[apiError](tb, resp, status)
	require.Equal(tb, code, e.Error.Code, "message: %s", e.Error.Message)
	require.NotEmpty(tb, e.Error.Message)
	require.Equal(tb, "application/json", resp.Header.Get("Content-Type"))
	return e
}

// param returns the param of an error body, "" for null.
func (e apiError) param() string {
	if e.Error.Param == nil {
		return ""
	}
	return *e.Error.Param
}

// hdr builds a header from key, value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// mustJSON marshals v.
func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	require.NoError(tb, err)
	return b
}

// typeOf returns the reflect.Type of T.
func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// fmtPath formats a request path.
func fmtPath(format string, args ...any) string { return fmt.Sprintf(format, args...) }
