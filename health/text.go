package health

import (
	"fmt"
	"strings"
	"time"
)

// Text renders the report for a terminal: problems with their meaning and
// action, then the checks that passed, one line each.
func (r *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "holdfast doctor: database %s on %s at %s\n", r.Database, r.Server, r.At.UTC().Format(time.RFC3339))
	for _, f := range r.Findings {
		if f.Severity == SeverityOK {
			continue
		}
		fmt.Fprintf(&b, "\n%-8s %s: %s\n", strings.ToUpper(string(f.Severity)), f.Check, f.Message)
		if f.Meaning != "" {
			fmt.Fprintf(&b, "         means: %s\n", f.Meaning)
		}
		if f.Action != "" {
			fmt.Fprintf(&b, "         do:    %s\n", f.Action)
		}
	}
	b.WriteString("\n")
	for _, f := range r.Findings {
		if f.Severity == SeverityOK {
			fmt.Fprintf(&b, "ok       %s: %s\n", f.Check, f.Message)
		}
	}
	fmt.Fprintf(&b, "\n%d critical, %d warn, %d ok\n", r.Count(SeverityCritical), r.Count(SeverityWarn), r.Count(SeverityOK))
	return b.String()
}

// RoundDuration is a duration for a report line: whole seconds from a
// minute up (1m8s, not 1m7.989s), hundredths of a second from a second,
// milliseconds below.
func RoundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute || d <= -time.Minute:
		return d.Round(time.Second)
	case d >= time.Second || d <= -time.Second:
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
