package pods

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/holdfast/holdfast"
)

// PartialError is the answer of an operation that spans shops (the
// invariant check, a sweep or waitlist pass, event sequencing) when some
// pods did not answer: it names them. The rest of the answer covers the
// pods that did. It matches holdfast.ErrUnavailable: a caller that needs
// every pod (the invariant check) must not take the partial answer for the
// whole.
type PartialError struct {
	Op string
	// Pods maps each pod that did not answer to why.
	Pods map[string]error
	// Answered is how many pods did.
	Answered int
}

func (e *PartialError) Error() string {
	names := make([]string, 0, len(e.Pods))
	for n := range e.Pods {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "pods: %s: partial answer: %d of %d pods did not answer:", e.Op, len(e.Pods), len(e.Pods)+e.Answered)
	for _, n := range names {
		fmt.Fprintf(&b, " pod %s: %v;", n, e.Pods[n])
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Unwrap makes a PartialError match holdfast.ErrUnavailable.
func (e *PartialError) Unwrap() error { return holdfast.ErrUnavailable }

// fanOut runs fn on every pod, at most FanOutConcurrency at once, each
// bounded by FanOutTimeout. A pod that is down is not asked. It answers a
// *PartialError naming the pods that failed or were skipped, or nil.
// fn must be safe to call concurrently (it merges under its own lock).
func (r *Router) fanOut(ctx context.Context, op string, fn func(ctx context.Context, name string, eng holdfast.Engine) error) error {
	var (
		mu     sync.Mutex
		failed = map[string]error{}
		wg     sync.WaitGroup
		sem    = make(chan struct{}, r.cfg.FanOutConcurrency)
	)
	for _, p := range r.order {
		if err := p.admit(false); err != nil {
			failed[p.name] = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				p.done()
				mu.Lock()
				failed[p.name] = ctx.Err()
				mu.Unlock()
				return
			}
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, r.cfg.FanOutTimeout)
			defer cancel()
			err := fn(pctx, p.name, p.eng)
			p.done()
			r.observe(p, err)
			if err != nil {
				mu.Lock()
				failed[p.name] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) == 0 {
		return nil
	}
	return &PartialError{Op: op, Pods: failed, Answered: len(r.order) - len(failed)}
}
