package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/engine/driver"
)

// TestTakeStripeAlternates: batches that run one at a time alternate the
// stripes, so one runner alone drains a key's counter rows evenly; a batch
// beside a running one takes the stripe that is free.
func TestTakeStripeAlternates(t *testing.T) {
	var cb combiner
	var got []int
	for range 4 {
		s := cb.nextStripe()
		cb.useStripe(s)
		got = append(got, s)
		cb.stripes[s] = false
	}
	if want := []int{1, 0, 1, 0}; !slices.Equal(got, want) {
		t.Fatalf("stripes of batches one at a time: %v, want %v", got, want)
	}
	a := cb.nextStripe()
	cb.useStripe(a)
	b := cb.nextStripe()
	cb.useStripe(b)
	if a == b {
		t.Fatalf("two running batches share stripe %d", a)
	}
	cb.stripes[b] = false
	if c := cb.nextStripe(); c != b {
		t.Fatalf("beside the batch on stripe %d, a batch took %d, want %d", a, c, b)
	}
}

// stripeRows is a driver whose batch key keeps one row of units per
// stripe, as PostgreSQL's deep batch keys do: only the combiner's methods
// are real (any other call panics on the nil Driver).
type stripeRows struct {
	driver.Driver[int]
	mu    sync.Mutex
	units [CombineRunnersMax]int
	gate  chan struct{} // when not nil, the first batch on stripe 1 waits for it to close
	log   []string      // "stripe:checkouts granted/asked"
}

func (d *stripeRows) CombineOverlap(holdfast.Key) int { return CombineRunnersMax }
func (d *stripeRows) CommitUnacknowledged(error) bool { return false }
func (d *stripeRows) CombineLockBusy(error) bool      { return false }
func (d *stripeRows) Retryable(error) bool            { return false }
func (d *stripeRows) ConnectionLost(error) bool       { return false }
func (d *stripeRows) Code(error) string               { return "" }

func (d *stripeRows) CombinedAttempt(_ context.Context, reqs []*driver.Reservation, stripe int) ([]*holdfast.Hold, []bool, error) {
	d.mu.Lock()
	gate := d.gate
	if stripe == 1 {
		d.gate = nil
	}
	d.mu.Unlock()
	if stripe == 1 && gate != nil {
		<-gate
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	holds, elsewhere := make([]*holdfast.Hold, len(reqs)), make([]bool, len(reqs))
	other := d.units[1-stripe]
	granted := 0
	for i, r := range reqs {
		q := r.Lines[0].Quantity
		switch {
		case q <= d.units[stripe]:
			d.units[stripe] -= q
			holds[i] = &holdfast.Hold{Status: holdfast.StatusHeld}
			granted++
		case q <= other:
			other -= q
			elsewhere[i] = true
		}
	}
	d.log = append(d.log, fmt.Sprintf("%d:%d/%d", stripe, granted, len(reqs)))
	return holds, elsewhere, nil
}

// TestRefusedJoinsTheOtherStripe: a request a batch did not grant for
// want of units on its stripe's row, while the key's other row had them,
// joins a batch on the other stripe — also when a batch holds that stripe
// at the time, after which the request waits for it, not a second batch
// on the stripe that refused it — and is granted there, never sent to the
// plain path.
func TestRefusedJoinsTheOtherStripe(t *testing.T) {
	gate := make(chan struct{})
	d := &stripeRows{units: [CombineRunnersMax]int{0, 5}, gate: gate}
	cfg := holdfast.Config{}.WithDefaults()
	c := NewClient[int](NewCore(cfg, d), d)
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	reserve := func() <-chan bool {
		granted := make(chan bool, 1)
		req := &driver.Reservation{Shop: 1, Checkout: uuid.New(), TTL: time.Minute,
			Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}}
		go func() {
			h, err, ok, _ := c.reserveCombined(context.Background(), k, req, 2)
			granted <- ok && err == nil && h != nil
		}()
		return granted
	}
	// The first batch takes stripe 1 and waits at the gate; the second
	// request's batch, on stripe 0, finds its row empty.
	first := reserve()
	waitFor(t, func() bool { p, running := CombinerLoad(c); return p == 0 && running == 1 })
	second := reserve()
	// Its batch done, the request waits in pending, and only the gated
	// runner runs.
	waitFor(t, func() bool {
		d.mu.Lock()
		n := len(d.log)
		d.mu.Unlock()
		p, running := CombinerLoad(c)
		return n >= 1 && p == 1 && running == 1
	})
	close(gate)
	if !<-first || !<-second {
		t.Fatalf("granted: want both by batches; batches %v", d.log)
	}
	if want := []string{"0:0/1", "1:1/1", "1:1/1"}; !slices.Equal(d.log, want) {
		t.Fatalf("batches (stripe:granted/asked) %v, want %v", d.log, want)
	}
}

// waitFor polls cond (in-memory state only) for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}
