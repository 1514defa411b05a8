package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
)

// ExampleServer_Handler serves the API and shows the error body of a request
// without a token. The daemon passes *runtime.Engine as the Engine and its
// module registry as the Modules; this example uses stand-ins, since no
// request here reaches the engine.
func ExampleServer_Handler() {
	srv, err := New(Config{Engine: &fakeEngine{}, Modules: &fakeEngine{}, Access: &fakeEngine{}})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/v1/tasks")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	fmt.Print(string(body))
	// Output:
	// 401 Bearer realm="weft"
	// {"error":{"type":"authentication_error","code":"missing_credential","message":"missing Authorization header: send Authorization: Bearer <token>","param":null}}
}
