package health_test

import (
	"testing"
	"time"

	"github.com/holdfast/holdfast/health"
)

// TestRoundDuration: doctor's durations read as people write them: 1m8s,
// not Go's 1m7.989s.
func TestRoundDuration(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want string
	}{
		{67989 * time.Millisecond, "1m8s"},
		{2*time.Hour + 3*time.Minute + 4567*time.Millisecond, "2h3m5s"},
		{4567 * time.Millisecond, "4.57s"},
		{1234567 * time.Microsecond / 1000, "1ms"},
		{987654 * time.Microsecond, "988ms"},
	} {
		if got := health.RoundDuration(c.in).String(); got != c.want {
			t.Errorf("RoundDuration(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}
