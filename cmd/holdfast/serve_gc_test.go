package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestTuneServeGC: serve collects at serveGCPercent under
// serveMemoryLimit unless the environment says otherwise (GOGC,
// GOMEMLIMIT), and then it leaves the runtime's settings alone.
func TestTuneServeGC(t *testing.T) {
	// Process-wide settings: not parallel (t.Setenv), and put back.
	gc0, lim0 := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(gc0); debug.SetMemoryLimit(lim0) })

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOGC")
	os.Unsetenv("GOMEMLIMIT")
	tuneServeGC()
	if gc, lim := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); gc != serveGCPercent || lim != serveMemoryLimit {
		t.Fatalf("no environment: GOGC %d, limit %d; want %d, %d", gc, lim, serveGCPercent, serveMemoryLimit)
	}

	// The runtime read these at start; serve must not override them.
	debug.SetGCPercent(150)
	debug.SetMemoryLimit(64 << 20)
	t.Setenv("GOGC", "150")
	t.Setenv("GOMEMLIMIT", "64MiB")
	tuneServeGC()
	if gc, lim := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); gc != 150 || lim != 64<<20 {
		t.Fatalf("GOGC=150 GOMEMLIMIT=64MiB: GOGC %d, limit %d", gc, lim)
	}
}
