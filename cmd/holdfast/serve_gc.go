package main

import (
	"os"
	"runtime/debug"
)

// serve's garbage collector. serve's live heap is small (about 6 MB under
// the hot bench: caches, pools, a request's few kilobytes each) while it
// allocates fast (about 9 KB per request, 75 MB/s at 8,500 requests/s), so
// at Go's default GOGC=100 it collected about 11 times a second and the
// collector took about a tenth of its CPU (docs/PERFORMANCE.md, "The
// service path's CPU per answer"). A larger growth factor collects less
// often; the soft limit keeps the heap bounded whatever the live heap.
const (
	// serveGCPercent is serve's GOGC unless the environment sets GOGC.
	serveGCPercent = 400
	// serveMemoryLimit is serve's soft memory limit (GOMEMLIMIT) unless
	// the environment sets GOMEMLIMIT: past it the collector runs as
	// often as it must, whatever serveGCPercent says.
	serveMemoryLimit = 1 << 30
)

// tuneServeGC sets serve's collector (serveGCPercent, serveMemoryLimit),
// leaving each setting the environment made. It logs nothing: a serve that
// fails to start says one line.
func tuneServeGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(serveGCPercent)
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}
