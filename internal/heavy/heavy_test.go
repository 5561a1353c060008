package heavy

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// TestLockExcludes shows the heavy lock excludes another holder until it
// is released, and that a release is idempotent.
func TestLockExcludes(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // not the machine's real lock
	t.Setenv("HOLDFAST_HEAVY_LOCK", "")
	try := func() error {
		f, err := os.Open(LockPath())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	release := Lock()
	if err := try(); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("second holder while held: %v, want EWOULDBLOCK", err)
	}
	release()
	release()
	if err := try(); err != nil {
		t.Fatalf("second holder after release: %v", err)
	}
	again := Lock()
	defer again()
	if err := try(); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("taken again: %v, want EWOULDBLOCK", err)
	}
}
