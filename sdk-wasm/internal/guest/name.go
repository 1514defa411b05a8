package guest

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
)

// FuncName returns the name Register uses for fn: its Go name without the
// package path ("Echo" for main.Echo). It panics for a closure, which has
// no stable name.
func FuncName(fn any) string {
	rf := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
	if rf == nil {
		panic("weft: cannot name the function; use RegisterWithOptions with a Name")
	}
	full := rf.Name()
	name := full[strings.LastIndexByte(full, '/')+1:]
	if _, after, ok := strings.Cut(name, "."); ok {
		name = after
	}
	if strings.Contains(name, ".func") || strings.ContainsAny(name, "[]") {
		panic(fmt.Sprintf("weft: %s is an anonymous or generic function; use RegisterWithOptions with a Name", full))
	}
	return strings.TrimSuffix(name, "-fm")
}
