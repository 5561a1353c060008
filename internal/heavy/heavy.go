// Package heavy serialises the test binaries that load the whole machine
// (each starts its own database servers and keeps every core busy).
package heavy

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// WaitMax bounds how long Lock waits for the machine-wide lock. A
// binary still waiting then runs anyway, unserialised, with a warning: a
// slower run beats a failed one.
const WaitMax = 30 * time.Minute

// LockPath is the machine-wide lock file of heavy test binaries.
func LockPath() string { return filepath.Join(os.TempDir(), "holdfast-heavy-tests.lock") }

// Lock takes the machine-wide lock that heavy test binaries hold while
// they run (the fault suite, the restart suite, the bench smoke: each
// starts its own PostgreSQL and keeps every core busy), so that at most one
// of them loads the machine at a time while light packages still run
// beside it. `go test ./...` runs packages in parallel; on a 2-core machine
// two heavy suites at once only make each other slow enough to hit their
// own statement and lock timeouts.
//
// It blocks until the lock is free (at most WaitMax) and returns the
// release, which is safe to call more than once. The lock is an flock(2) on
// LockPath, so a crashed binary never leaves it held. When the lock
// cannot be taken the binary runs anyway and Lock says so on stderr.
// HOLDFAST_HEAVY_LOCK=off skips the lock (a machine with cores to spare).
func Lock() (release func()) {
	if os.Getenv("HOLDFAST_HEAVY_LOCK") == "off" {
		return func() {}
	}
	f, err := os.OpenFile(LockPath(), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		fmt.Fprintf(os.Stderr, "heavy: heavy-suite lock: %v; running unserialised\n", err)
		return func() {}
	}
	_ = os.Chmod(f.Name(), 0o666) // shared by every user's test binaries
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		start := time.Now()
		fmt.Fprintf(os.Stderr, "heavy: waiting for another heavy test binary to finish (%s)\n", f.Name())
		got := make(chan error, 1)
		go func() { got <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
		timer := time.NewTimer(WaitMax)
		defer timer.Stop()
		select {
		case err := <-got:
			if err != nil {
				fmt.Fprintf(os.Stderr, "heavy: heavy-suite lock: %v; running unserialised\n", err)
			} else {
				fmt.Fprintf(os.Stderr, "heavy: heavy-suite lock taken after %v\n", time.Since(start).Round(time.Millisecond))
			}
		case <-timer.C:
			// The waiting flock stays pending; the process exit ends it.
			fmt.Fprintf(os.Stderr, "heavy: heavy-suite lock still held after %v; running unserialised\n", WaitMax)
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
