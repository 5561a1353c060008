package bench

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// Progress lines on a terminal while runs go.

// isTerminal reports whether w is a terminal, where the progress line may
// be redrawn in place with escapes.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress writes the progress line: redrawn in place on a terminal, else
// a plain line at most every Options.ProgressEvery.
func (r *runner) progress(format string, args ...any) {
	if r.o.Progress == nil {
		return
	}
	if r.tty {
		fmt.Fprintf(r.o.Progress, "\r"+format+"\033[K", args...)
		return
	}
	now := time.Now()
	if !r.lastProgress.IsZero() && now.Sub(r.lastProgress) < r.o.ProgressEvery {
		return
	}
	r.lastProgress = now
	fmt.Fprintf(r.o.Progress, format+"\n", args...)
}

// progressDone ends the progress line.
func (r *runner) progressDone() {
	if r.o.Progress != nil && r.tty {
		fmt.Fprint(r.o.Progress, "\r\033[K")
	}
}
