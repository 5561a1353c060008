package holdfast_test

import (
	"sync"
	"time"

	"github.com/holdfast/holdfast"
)

type countingObserver struct {
	mu      sync.Mutex
	retries map[string]int
	slow    map[string]time.Duration
}

func (o *countingObserver) Op(route, outcome string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d > o.slow[route] {
		o.slow[route] = d
	}
}
func (o *countingObserver) Retry(route, state string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retries[route+" "+state]++
}
func (o *countingObserver) Replenished(holdfast.Key, bool, int) {}
func (o *countingObserver) Expired(int)                         {}
func (o *countingObserver) Claimed(time.Duration)               {}
