package pods_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/pods"
)

// fencing is a pod's real engine with the answer a move's placement guard
// will give (#28 item 2, not built yet): ErrShopMoved, nothing applied,
// for the shops it fences. Everything else goes to the real engine.
type fencing struct {
	holdfast.Engine
	mu     sync.Mutex
	fenced map[int64]bool
	calls  int
}

func (f *fencing) Reserve(ctx context.Context, p holdfast.ReserveParams) (*holdfast.Hold, error) {
	f.mu.Lock()
	f.calls++
	fenced := f.fenced[p.ShopID]
	f.mu.Unlock()
	if fenced {
		return nil, holdfast.ErrShopMoved
	}
	return f.Engine.Reserve(ctx, p)
}

// TestShopMovedAnswer: a pod that answers ErrShopMoved for a shop makes
// the router re-read the placement and retry once on the shop's new pod
// (a router that has not followed the switch yet still serves the
// request); a shop fenced where it is keeps its retriable answer; and
// fenced answers never mark the pod down — its other shops trade.
func TestShopMovedAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newPod(t, "a", serverA), newPod(t, "b", serverB)
	fa := &fencing{Engine: a.eng, fenced: map[int64]bool{}}
	m := newMap(t)
	r, err := pods.New(ctx, m, []pods.Pod{{Name: "a", Engine: fa, Ping: a.pool.Ping}, b.pod()}, pods.Config{FollowInterval: -1, CacheTTL: pods.CacheTTLMax, MoveWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	for _, shop := range []int64{1, 7, 8} {
		if _, err := m.Assign(ctx, shop, "a"); err != nil {
			t.Fatal(err)
		}
		stock(t, r, shop, 10)
	}
	stock(t, b.eng, 7, 10) // the moved shop's rows, as the move's copy leaves them
	if pl, _ := r.Placement(ctx, 7); pl.Pod != "a" {
		t.Fatalf("cached placement %+v", pl)
	}
	// Shop 7 moves to b; this router does not follow, its cache says a.
	if _, err := m.Switch(ctx, 7, "a", 1, "b"); err != nil {
		t.Fatal(err)
	}
	fa.mu.Lock()
	fa.fenced[7], fa.fenced[8] = true, true
	fa.mu.Unlock()
	h, err := r.Reserve(ctx, cart(7))
	if err != nil {
		t.Fatalf("reserve of the moved shop through a stale router: %v", err)
	}
	if got, err := b.eng.Hold(ctx, 7, h.CheckoutID); err != nil || got.Status != holdfast.StatusHeld {
		t.Fatalf("the hold is not on pod b: %+v, %v", got, err)
	}
	if pl, _ := r.Placement(ctx, 7); pl.Pod != "b" || pl.Epoch != 2 {
		t.Fatalf("the router's placement after the answer: %+v", pl)
	}
	// Shop 8 is fenced where it is: retriable, again and again, and pod a
	// stays up for shop 1.
	for range 5 {
		if _, err := r.Reserve(ctx, cart(8)); !errors.Is(err, holdfast.ErrShopMoved) || !errors.Is(err, holdfast.ErrUnavailable) {
			t.Fatalf("reserve of a fenced shop: %v, want ErrShopMoved (matching ErrUnavailable)", err)
		}
	}
	for _, s := range r.Status() {
		if !s.Up {
			t.Fatalf("pod %s marked down by fenced answers: %+v", s.Name, s)
		}
	}
	if _, err := r.Reserve(ctx, cart(1)); err != nil {
		t.Fatalf("shop 1 on pod a: %v", err)
	}
}

// TestNotFoundReadsThePlacementAgain: a pod that answers "not found" for
// a shop's hold makes the router read the shop's placement again, however
// recently its cached read was made (another call's read a moment before
// the move's switch), and ask the pod the map names: the hold, on the pod
// the shop moved to, is found. The router's clock moves 1 ms between the
// cached read and the call (a read well within any sharing window).
func TestNotFoundReadsThePlacementAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newPod(t, "a", serverA), newPod(t, "b", serverB)
	m := newMap(t)
	var clock sync.Mutex
	now := time.Now()
	tick := func(d time.Duration) {
		clock.Lock()
		now = now.Add(d)
		clock.Unlock()
	}
	cfg := pods.Config{FollowInterval: -1, CacheTTL: pods.CacheTTLMax,
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }}
	r, err := pods.New(ctx, m, []pods.Pod{a.pod(), b.pod()}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	if _, err := m.Assign(ctx, 9, "a"); err != nil {
		t.Fatal(err)
	}
	stock(t, b.eng, 9, 10) // the moved shop, as the move leaves it on b
	h, err := b.eng.Reserve(ctx, cart(9))
	if err != nil {
		t.Fatal(err)
	}
	if pl, _ := r.Placement(ctx, 9); pl.Pod != "a" {
		t.Fatalf("cached placement %+v", pl)
	}
	if _, err := m.Switch(ctx, 9, "a", 1, "b"); err != nil {
		t.Fatal(err)
	}
	tick(time.Millisecond)
	got, err := r.Hold(ctx, 9, h.CheckoutID)
	if err != nil || got.Status != holdfast.StatusHeld {
		t.Fatalf("the moved shop's hold through a router whose read is 1 ms old: %+v, %v; want it found on b", got, err)
	}
	if pl, _ := r.Placement(ctx, 9); pl.Pod != "b" {
		t.Fatalf("the router's placement after the answer: %+v", pl)
	}
}
