package console

import (
	"testing"
	"time"

	"github.com/holdfast/holdfast"
)

// TestDropPhase: a drop's state as a key page says it, at the window's
// edges: scheduled before it, open from its start, closed (the draw due)
// from its end until the engine draws it, then drawn whatever the clock.
func TestDropPhase(t *testing.T) {
	start := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	d := &holdfast.Drop{StartsAt: start, Window: time.Minute, State: holdfast.DropOpen}
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{start.Add(-time.Millisecond), "scheduled"},
		{start, "open"},
		{start.Add(time.Minute - time.Millisecond), "open"},
		{start.Add(time.Minute), "closed, draw due"},
		{start.Add(time.Hour), "closed, draw due"},
	} {
		if got := dropPhase(d, tc.at); got != tc.want {
			t.Errorf("at %v: %q, want %q", tc.at.Sub(start), got, tc.want)
		}
	}
	d.State = holdfast.DropDrawn
	if got := dropPhase(d, start.Add(-time.Hour)); got != "drawn" {
		t.Errorf("a drawn drop: %q", got)
	}
}
