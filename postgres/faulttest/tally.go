package faulttest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Tally counts injected faults and the checks run after the scenarios that
// injected them. Safe for concurrent use; the zero value is empty.
type Tally struct {
	mu   sync.Mutex
	rows map[string]*TallyRow
}

// TallyRow is one fault's counts.
type TallyRow struct {
	Injected  int // times the fault was injected
	Scenarios int // scenarios (tests) that injected it
	Checks    int // assertions run after those scenarios
}

// Total is the tally of the whole test binary; Env.Close merges each
// scenario's tally into it.
var Total = &Tally{}

// Inject counts n injections of fault.
func (t *Tally) Inject(fault string, n int) {
	if n == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.row(fault).Injected += n
}

func (t *Tally) row(fault string) *TallyRow {
	if t.rows == nil {
		t.rows = map[string]*TallyRow{}
	}
	r, ok := t.rows[fault]
	if !ok {
		r = &TallyRow{}
		t.rows[fault] = r
	}
	return r
}

// Injected returns how often fault was injected.
func (t *Tally) Injected(fault string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.rows[fault]; ok {
		return r.Injected
	}
	return 0
}

// Merge adds a scenario's tally to t: every fault it injected gets one more
// scenario and the scenario's checks.
func (t *Tally) Merge(s *Tally, checks int) {
	s.mu.Lock()
	rows := maps.Clone(s.rows)
	s.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, r := range rows {
		if r.Injected == 0 {
			continue
		}
		dst := t.row(name)
		dst.Injected += r.Injected
		dst.Scenarios++
		dst.Checks += checks + r.Checks
	}
}

// String is the tally as a table.
func (t *Tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%-48s %9s %9s %9s\n", "fault", "injected", "scenarios", "checks")
	for _, name := range slices.Sorted(maps.Keys(t.rows)) {
		r := t.rows[name]
		fmt.Fprintf(&b, "%-48s %9d %9d %9d\n", name, r.Injected, r.Scenarios, r.Checks)
	}
	return b.String()
}
