package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/weft-run/weft/runtime/fault"
)

// statusWriter records the status a handler writes and whether it wrote
// anything. It keeps http.ResponseController working through Unwrap.
type statusWriter struct {
	http.ResponseWriter
	status  int
	written bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.written {
		w.status, w.written = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if !w.written {
		w.status, w.written = http.StatusOK, true
	}
	return w.ResponseWriter.Write(p)
}

// Flush forwards to the underlying writer, for SSE streams.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying writer (http.ResponseController).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recoverPanic turns a handler panic into a logged 500 (when nothing has been
// written yet) instead of a dropped connection. http.ErrAbortHandler is passed
// on, as net/http expects.
func (s *Server) recoverPanic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			err := &fault.Error{Code: fault.Internal, Message: "internal error", Err: fmt.Errorf("panic: %v", v)}
			if sw.written {
				s.log.Error("handler panic after the response started", "method", r.Method, "path", r.URL.Path, "panic", v)
				panic(http.ErrAbortHandler)
			}
			s.writeError(sw, r, err)
		}()
		next.ServeHTTP(sw, r)
	})
}

// httpMetrics are the server's own Prometheus metrics.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weft_http_requests_total",
		Help: "HTTP requests served, by method, route pattern and status code.",
	}, []string{"method", "route", "code"})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "weft_http_request_duration_seconds",
		Help:    "Time to serve an HTTP request, by method and route pattern (SSE streams included).",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route"})
	var err error
	if requests, err = register(reg, requests); err != nil {
		return nil, err
	}
	if duration, err = register(reg, duration); err != nil {
		return nil, err
	}
	return &httpMetrics{requests: requests, duration: duration}, nil
}

// register registers c, or returns the collector already registered under
// its name (two servers on one registry share their metrics).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("register http metrics: %w", err)
	}
	return c, nil
}

// methodLabel is the method label of a request: one of the standard
// methods, or "other". Every label of the HTTP metrics has a bounded set
// of values, whatever clients send: the method so, the route as the
// pattern that matched (or "unmatched"), the status as a number the
// handlers write.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// instrument counts and times every request by its route pattern, and traces
// it at debug level.
func (s *Server) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			status := sw.status
			if !sw.written {
				status = http.StatusOK
			}
			elapsed := time.Since(start)
			method := methodLabel(r.Method)
			s.metrics.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
			s.metrics.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
			if s.log.IsDebug() {
				s.log.Debug("request", "method", r.Method, "route", route, "status", status, "duration", elapsed)
			}
		}()
		next.ServeHTTP(sw, r)
	})
}
