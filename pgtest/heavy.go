package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// HeavyWaitMax bounds how long Heavy waits for the machine-wide lock. A
// binary still waiting then runs anyway, unserialised, with a warning: a
// slower run beats a failed one.
const HeavyWaitMax = 30 * time.Minute

// HeavyLockPath is the machine-wide lock file of heavy test binaries.
func HeavyLockPath() string { return filepath.Join(os.TempDir(), "holdfast-heavy-tests.lock") }

// Heavy takes the machine-wide lock that heavy test binaries hold while
// they run (the fault suite, the restart suite, the bench smoke: each
// starts its own PostgreSQL and keeps every core busy), so that at most one
// of them loads the machine at a time while light packages still run
// beside it. `go test ./...` runs packages in parallel; on a 2-core machine
// two heavy suites at once only make each other slow enough to hit their
// own statement and lock timeouts.
//
// It blocks until the lock is free (at most HeavyWaitMax) and returns the
// release, which is safe to call more than once. The lock is an flock(2) on
// HeavyLockPath, so a crashed binary never leaves it held. When the lock
// cannot be taken the binary runs anyway and Heavy says so on stderr.
// HOLDFAST_HEAVY_LOCK=off skips the lock (a machine with cores to spare).
func Heavy() (release func()) {
	if os.Getenv("HOLDFAST_HEAVY_LOCK") == "off" {
		return func() {}
	}
	f, err := os.OpenFile(HeavyLockPath(), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: heavy-suite lock: %v; running unserialised\n", err)
		return func() {}
	}
	_ = os.Chmod(f.Name(), 0o666) // shared by every user's test binaries
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		start := time.Now()
		fmt.Fprintf(os.Stderr, "pgtest: waiting for another heavy test binary to finish (%s)\n", f.Name())
		got := make(chan error, 1)
		go func() { got <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
		timer := time.NewTimer(HeavyWaitMax)
		defer timer.Stop()
		select {
		case err := <-got:
			if err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: heavy-suite lock: %v; running unserialised\n", err)
			} else {
				fmt.Fprintf(os.Stderr, "pgtest: heavy-suite lock taken after %v\n", time.Since(start).Round(time.Millisecond))
			}
		case <-timer.C:
			// The waiting flock stays pending; the process exit ends it.
			fmt.Fprintf(os.Stderr, "pgtest: heavy-suite lock still held after %v; running unserialised\n", HeavyWaitMax)
			return func() {}
		}
	}
	released := false
	return func() {
		if !released {
			released = true
			f.Close() // closing the last descriptor drops the flock
		}
	}
}

// MainHeavy is Main for a heavy test binary: it holds the machine-wide
// heavy lock (see Heavy) from before its server starts until it stops.
func MainHeavy(m *testing.M) {
	release := Heavy()
	code := run(m)
	release()
	os.Exit(code)
}
