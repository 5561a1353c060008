package enginetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
)

// mergeExpiryRoundsMax bounds testMergeExpiryRace's rounds: it runs
// mergeExpiryRounds, and on up to this many until both outcomes were seen.
const (
	mergeExpiryRounds    = 12
	mergeExpiryRoundsMax = 36
)

// clockSlack is what testMergeExpiryRace allows between the test's clock
// and the database's (one host's clock, read at microseconds).
const clockSlack = time.Millisecond

// mergeExpirySweepEvery paces testMergeExpiryRace's sweeper (a workload's
// pace, not a wait for state).
const mergeExpirySweepEvery = 2 * time.Millisecond

// testMergeExpiryRace: a merge whose source's TTL runs out while the merge
// runs, on the database's own clock, with a sweeper running all along.
// testMergeRaces' expiry rounds move the injected clock past the expiry at
// once, before the merge reads it: they race the sweep of a hold already
// lapsed. Here each merge is fired around its source's expiry instant (the
// instant adapts: later after a merge won, earlier after one lost), so
// either outcome happens and each must be whole: merged (the source
// released, merged into the destination, which holds both lines) or
// ErrHoldExpired (the source expired, swept or lapsed, the destination
// untouched); never both, never neither; a merge that started after the
// expiry never wins, one that returned before it never loses; every unit
// back at the end.
func testMergeExpiryRace(t *testing.T, h *Harness) {
	t.Parallel()
	e := h.newEnv(t, holdfast.Config{Strategy: h.Strategies[0]}, Options{Conns: 8, RealClock: true})
	k1, k2 := key(1, 1), key(1, 2)
	e.stock(k1, 500)
	e.stock(k2, 500)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sweepErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(mergeExpirySweepEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := e.e.SweepOnce(ctxb()); err != nil && sweepErr == nil {
				sweepErr = err
			}
		}
	}()
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt()

	won, lost := 0, 0
	offset := -10 * time.Millisecond // when the merge starts, from the source's expiry
	for r := 0; r < mergeExpiryRoundsMax && (r < mergeExpiryRounds || won == 0 || lost == 0); r++ {
		guest := e.reserveTTL(1, one(1, 1), holdfast.HoldTTLMin, "")
		customer := e.reserveTTL(1, one(2, 1), time.Hour, "")
		exp := e.hold(1, guest).ExpiresAt
		// Start the merge at exp+offset: a timer schedules the call, it
		// does not wait for a state.
		<-time.After(time.Until(exp.Add(offset)))
		start := time.Now()
		got, err := e.merge(1, guest, customer)
		end := time.Now()
		src, dst := e.hold(1, guest), e.hold(1, customer)
		switch {
		case err == nil && start.After(exp.Add(clockSlack)):
			t.Fatalf("round %d: merged a source past its expiry: the call started %v after it", r, start.Sub(exp))
		case errors.Is(err, holdfast.ErrHoldExpired) && end.Before(exp.Add(-clockSlack)):
			t.Fatalf("round %d: a merge answered the source expired %v before its expiry", r, exp.Sub(end))
		case err == nil:
			won++
			offset += 4 * time.Millisecond
			want := append(one(1, 1), one(2, 1)...)
			if src.Status != holdfast.StatusReleased || src.MergedInto == nil || *src.MergedInto != customer ||
				!slices.Equal(got.Lines, want) || !slices.Equal(dst.Lines, want) || dst.Status != holdfast.StatusHeld {
				t.Fatalf("round %d (offset %v): merge won, yet source %+v destination %+v answer %+v", r, offset, src, dst, got)
			}
		case errors.Is(err, holdfast.ErrHoldExpired):
			lost++
			offset -= 4 * time.Millisecond
			if src.Status != holdfast.StatusExpired || src.MergedInto != nil || !slices.Equal(dst.Lines, one(2, 1)) || dst.Revision != 1 {
				t.Fatalf("round %d (offset %v): the source's expiry won, yet source %+v destination %+v", r, offset, src, dst)
			}
		default:
			t.Fatalf("round %d (offset %v): merge at the source's expiry: %v", r, offset, err)
		}
		if _, err := e.e.Release(ctxb(), 1, customer); err != nil {
			t.Fatalf("round %d: release the destination: %v", r, err)
		}
	}
	halt()
	if sweepErr != nil {
		t.Fatalf("sweeper: %v", sweepErr)
	}
	t.Logf("merges at the source's expiry: %d won, %d lost to it (last offset %v)", won, lost, offset)
	if won == 0 || lost == 0 {
		t.Fatalf("the merge never %s in %d rounds: the race raced nothing", map[bool]string{true: "won", false: "lost"}[won == 0], mergeExpiryRoundsMax)
	}
	// Every unit is back: merged ones released with the destination,
	// expired ones once swept.
	for e.sweep(0) > 0 {
	}
	e.assertSellable(k1, 500)
	e.assertSellable(k2, 500)
}
