package pods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Bounds and defaults of a shop move (Move).
const (
	// FenceWaitDefault bounds the wait for the shop's writes in flight on
	// the source when the fence goes up (MoveParams.FenceWait).
	FenceWaitDefault = 5 * time.Second
	// MoveStepTimeout bounds each step of a move after the fence is up
	// (the copy, the verify, the switch) — and so the fence.
	MoveStepTimeout = 5 * time.Minute
	// PurgeDelayDefault is how long a move waits after the switch before
	// it deletes the shop's rows on the source: routers following the map
	// (Config.FollowInterval) have switched by then, so a read a stale
	// router sends to the source meanwhile still finds the shop's rows as
	// they were at the fence (writes there are refused, ErrShopMoved).
	PurgeDelayDefault = 3 * FollowIntervalDefault
	// PurgeBatch bounds the rows one purge statement deletes.
	PurgeBatch = 5_000
)

// Fence states of a shop on a pod (MoveStore.FenceState).
const (
	// FenceNone: the pod serves the shop's writes when the map places the
	// shop there.
	FenceNone = ""
	// FenceIncoming: a move copied the shop here and has not switched it
	// (yet): its writes are refused.
	FenceIncoming = "incoming"
	// FenceGone: the shop moved away; its writes here are refused.
	FenceGone = "gone"
)

// MoveStore is one pod's database as a shop move needs it (package
// postgres/pgmove is PostgreSQL's). Implementations must be safe for
// concurrent use.
type MoveStore interface {
	// Fence refuses the shop's new writes on this pod (the engine answers
	// holdfast.ErrShopMoved, nothing applied) and waits, at most until
	// ctx ends, for its writes in flight to finish. The fence lasts until
	// released — or until the process holding it dies.
	Fence(ctx context.Context, shopID int64) (Fence, error)
	// Copy copies the fenced shop's rows, in one snapshot of this pod,
	// into to (same engine) in one transaction that marks the shop
	// FenceIncoming there and advances to's sequences past the copied
	// ids; it answers the rows copied. It refuses (ErrMoveRefused) a shop
	// with rows in tables a move cannot carry, or a target that holds
	// rows of the shop.
	Copy(ctx context.Context, f Fence, to MoveStore, fromPod string) (int64, error)
	// Digest answers, per table, the shop's row count and a hash of its
	// rows in order, from one snapshot.
	Digest(ctx context.Context, shopID int64) ([]TableDigest, error)
	// FenceState answers FenceNone, FenceIncoming or FenceGone.
	FenceState(ctx context.Context, shopID int64) (string, error)
	// Tombstone marks the shop FenceGone here (moved to pod to).
	Tombstone(ctx context.Context, shopID int64, to string) error
	// Accept ends FenceIncoming: the pod serves the shop's writes.
	Accept(ctx context.Context, shopID int64) error
	// Restore ends FenceGone: the pod serves the shop's writes again (an
	// abort before the switch).
	Restore(ctx context.Context, shopID int64) error
	// Discard deletes the rows of a shop that is FenceIncoming here, and
	// the mark (an abort); a shop in any other state is left alone
	// (ErrMoveRefused).
	Discard(ctx context.Context, shopID int64) error
	// Purge deletes up to batch rows of a shop that is FenceGone here
	// and answers how many it deleted (0: none left).
	Purge(ctx context.Context, shopID int64, batch int) (int64, error)
}

// Streamer is a MoveStore that can move a shop ahead of its fence: copy
// its rows while it trades and stream its changes to the target as they
// commit (PostgreSQL's logical replication, package postgres/pgmove), so
// the fence lasts as long as the catch-up and the verify, not the copy.
type Streamer interface {
	MoveStore
	// Stream marks the shop incoming on to, starts copying its rows there
	// and streaming its changes, and returns once the copy is done and
	// changes are applied as they commit — or fails having left nothing
	// behind. ErrStreamUnavailable: this pair of pods cannot stream (the
	// fenced copy can still move the shop).
	Stream(ctx context.Context, shopID int64, to MoveStore, fromPod string) (Stream, error)
	// DropStreams drops, on this pod, what a stream of the shop left
	// behind (a subscription, a publication, replication slots): Abort's
	// cleanup after a move that died. The subscription side first: Abort
	// calls it on every pod, then again.
	DropStreams(ctx context.Context, shopID int64) error
}

// Stream is a shop's change stream from its source pod to a target
// (Streamer.Stream).
type Stream interface {
	// CatchUp, under the source's fence f, returns once the target has
	// applied every change of the shop the source committed, advanced the
	// target's sequences past the shop's ids and stopped applying.
	CatchUp(ctx context.Context, f Fence) error
	// Stop ends the stream on both pods; idempotent. The target's copy
	// stays (Discard deletes it).
	Stop(ctx context.Context) error
}

// Move methods (MoveParams.Method).
const (
	// MethodAuto streams when both pods can (Streamer), else copies under
	// the fence.
	MethodAuto = ""
	// MethodStream copies and streams the shop ahead of the fence; the
	// fence covers the catch-up, the verify and the switch.
	MethodStream = "stream"
	// MethodCopy copies the shop under the fence.
	MethodCopy = "copy"
)

// Fence is a shop fenced on its source pod by MoveStore.Fence.
type Fence interface {
	ShopID() int64
	// Release lifts the fence (the tombstone, if any, stays).
	Release(ctx context.Context) error
}

// TableDigest is one table's share of a shop: its row count and a hash of
// its rows in a fixed order.
type TableDigest struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	Hash  string `json:"hash"`
}

// Errors of a move.
var (
	// ErrMoveRefused: the move was not started, or was undone, because a
	// precondition does not hold (the shop is already on the target, the
	// target holds rows of it, the shop has rows a move cannot carry, a
	// pod's state is not what the step expects). Nothing changed.
	ErrMoveRefused = errors.New("pods: move refused")
	// ErrMoveMismatch: the verify found the target's copy different from
	// the source; the move was undone (the target's copy deleted, the
	// shop unfenced on the source).
	ErrMoveMismatch = errors.New("pods: the copy does not match the source")
	// ErrMoveUnresolved: the switch's outcome is not known (the map could
	// not be read back). The shop stays fenced on the source (its writes
	// are refused everywhere) until `holdfast pods abort` (or the same
	// move again) resolves it from the map.
	ErrMoveUnresolved = errors.New("pods: the move's switch is unresolved")
	// ErrMoveIncomplete: the move failed before the switch and could not
	// undo all it did — a pod was unreachable (its server down, say). The
	// map still places the shop on its source; what the move left (a
	// copy marked incoming on the target, a stream, the source's gone
	// mark) stays until `holdfast pods abort` (Abort), once the pods are
	// reachable, resolves the shop from the map. Meanwhile the shop's
	// writes are served by the source, or refused retriably where a mark
	// stays: never lost, never applied twice.
	ErrMoveIncomplete = errors.New("pods: the move stopped and could not undo itself (run pods abort)")
	// ErrStreamUnavailable: the pods cannot stream a shop (PostgreSQL's
	// wal_level is not logical, a schema without the move marks, a role
	// that may not replicate); MethodAuto falls back to the fenced copy.
	ErrStreamUnavailable = errors.New("pods: the pods cannot stream a shop")
)

// MoveParams is one shop move.
type MoveParams struct {
	ShopID int64
	// To is the target pod's name.
	To string
	// Stores are the pods' databases, by name (source and target at
	// least).
	Stores map[string]MoveStore
	// Method is MethodAuto (the default), MethodStream or MethodCopy.
	Method string
	// FenceWait defaults to FenceWaitDefault.
	FenceWait time.Duration
	// PurgeDelay defaults to PurgeDelayDefault; negative: do not purge
	// (the source keeps the shop's rows, fenced as gone).
	PurgeDelay time.Duration
	// Map is the shard map; defaults to Router's.
	Map Map
	// Router, when set, drops its cached placement of the shop at the
	// switch (routers that follow the map see it within their
	// FollowInterval; a router that does not, at its next call refused by
	// the source).
	Router *Router
	// BeforeFence, when set, runs once the move is ready to fence the shop
	// (a streamed move: its copy is done and its changes stream) and may
	// wait for a moment of its choosing — a quiet minute, or, in the
	// pods demo, the middle of the sale. Its error stops the move, undone.
	BeforeFence func(ctx context.Context) error
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// MoveReport is what a move did, with its timings.
type MoveReport struct {
	ShopID int64  `json:"shop_id"`
	From   string `json:"from"`
	To     string `json:"to"`
	Epoch  int64  `json:"epoch"`
	Rows   int64  `json:"rows"`
	// Method is how the rows went: MethodStream or MethodCopy.
	Method string `json:"method"`
	// Stream is how long the copy ahead of the fence took (MethodStream),
	// the shop trading meanwhile.
	Stream time.Duration `json:"stream,omitempty"`
	// Fence is how long the shop's writes were refused: from the request
	// of the fence to the target's accepting them. FenceWait, Copy, Verify
	// (the target's digest, and the wait for the source's, taken during
	// the copy) and Switch are its parts; with MethodStream, Copy is the
	// catch-up under the fence.
	Fence     time.Duration `json:"fence"`
	FenceWait time.Duration `json:"fence_wait"`
	Copy      time.Duration `json:"copy"`
	Verify    time.Duration `json:"verify"`
	Switch    time.Duration `json:"switch"`
	Purged    int64         `json:"purged"`
	Tables    []TableDigest `json:"tables"`
	// Purge is how long the purge of the source's rows took (after
	// PurgeDelay).
	Purge time.Duration `json:"purge,omitempty"`
}

// Move moves a shop to another pod. Streamed (MethodStream, chosen by
// MethodAuto when the pods can): copy the shop's rows to the target and
// stream its changes while it trades, then fence the shop on its source
// (new writes refused, writes in flight waited for), wait for the target
// to apply the last of them, verify ... as below. As a fenced copy
// (MethodCopy): fence the shop on its source, copy its rows to the target
// in one transaction, verify (per table: count and ordered
// hash on both sides), mark it gone on the source, switch the map, let the
// target serve it, lift the fence, then (after PurgeDelay) delete the
// source's rows. A failure before the switch undoes what was done: the
// target's copy deleted, the source serving the shop. It is not safe to
// run two moves of one shop at once from processes that do not share the
// source's fence; the fence serializes them on the source.
func Move(ctx context.Context, p MoveParams) (*MoveReport, error) { return observedMove(ctx, p, nil) }

// move is Move; hook, when not nil (tests, Mover's progress), runs after
// the steps "fenced", "copied", "verified", "gone" and "switched", and its
// error fails the step.
func move(ctx context.Context, p MoveParams, hook func(step string) error) (*MoveReport, error) {
	if hook == nil {
		hook = func(string) error { return nil }
	}
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	if p.FenceWait <= 0 {
		p.FenceWait = FenceWaitDefault
	}
	if p.PurgeDelay == 0 {
		p.PurgeDelay = PurgeDelayDefault
	}
	if p.ShopID <= 0 {
		return nil, fmt.Errorf("%w: shop id %d", ErrMoveRefused, p.ShopID)
	}
	m, err := p.mapOf()
	if err != nil {
		return nil, err
	}
	pl, err := m.Lookup(ctx, p.ShopID)
	if err != nil {
		return nil, fmt.Errorf("pods: move: reading shop %d's placement: %w", p.ShopID, err)
	}
	if pl.Pod == p.To {
		return nil, fmt.Errorf("%w: shop %d is on pod %s already", ErrMoveRefused, p.ShopID, p.To)
	}
	src, dst := p.Stores[pl.Pod], p.Stores[p.To]
	if src == nil || dst == nil {
		return nil, fmt.Errorf("%w: %w: move needs the stores of pods %s and %s", ErrMoveRefused, ErrUnknownPod, pl.Pod, p.To)
	}
	if st, err := dst.FenceState(ctx, p.ShopID); err != nil {
		return nil, err
	} else if st == FenceIncoming {
		return nil, fmt.Errorf("%w: shop %d is marked incoming on %s by an earlier move; run pods abort first", ErrMoveRefused, p.ShopID, p.To)
	}
	if st, err := src.FenceState(ctx, p.ShopID); err != nil {
		return nil, err
	} else if st != FenceNone {
		return nil, fmt.Errorf("%w: shop %d is marked %s on its pod %s; run pods abort first", ErrMoveRefused, p.ShopID, st, pl.Pod)
	}
	rep := &MoveReport{ShopID: p.ShopID, From: pl.Pod, To: p.To, Method: MethodCopy}

	// Streamed: the copy runs ahead of the fence, the shop trading.
	var stream Stream
	switch sa, ok := src.(Streamer); {
	case p.Method != MethodAuto && p.Method != MethodStream && p.Method != MethodCopy:
		return nil, fmt.Errorf("%w: method %q (want %q, %q or empty)", ErrMoveRefused, p.Method, MethodStream, MethodCopy)
	case p.Method == MethodCopy:
	case !ok && p.Method == MethodStream:
		return nil, fmt.Errorf("%w: %w: pod %s (%T) cannot stream", ErrMoveRefused, ErrStreamUnavailable, pl.Pod, src)
	case ok:
		t := time.Now()
		stctx, cancel := context.WithTimeout(ctx, MoveStepTimeout)
		var err error
		stream, err = sa.Stream(stctx, p.ShopID, dst, pl.Pod)
		cancel()
		switch {
		case errors.Is(err, ErrStreamUnavailable) && p.Method == MethodAuto:
			log.Info("pods: move: copying under the fence", "shop", p.ShopID, "reason", err)
		case err != nil:
			return nil, fmt.Errorf("pods: move: streaming shop %d from %s to %s: %w", p.ShopID, pl.Pod, p.To, err)
		default:
			rep.Method, rep.Stream = MethodStream, time.Since(t)
		}
	}
	stopStream := func() error {
		if stream == nil {
			return nil
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), MoveStepTimeout)
		defer cancel()
		err := stream.Stop(sctx)
		if err == nil {
			stream = nil
		}
		return err
	}
	undoStream := func(cause error) error {
		uctx := context.WithoutCancel(ctx)
		if err := stopStream(); err != nil {
			return fmt.Errorf("%w: %w; ending the stream failed too: %w", ErrMoveIncomplete, cause, err)
		}
		if err := dst.Discard(uctx, p.ShopID); err != nil && !errors.Is(err, ErrMoveRefused) {
			return fmt.Errorf("%w: %w; deleting the target's copy failed too: %w", ErrMoveIncomplete, cause, err)
		}
		return cause
	}

	if p.BeforeFence != nil {
		if err := p.BeforeFence(ctx); err != nil {
			return nil, undoStream(fmt.Errorf("pods: move: before the fence: %w", err))
		}
	}
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, p.FenceWait)
	f, err := src.Fence(fctx, p.ShopID)
	cancel()
	if err != nil {
		return nil, undoStream(fmt.Errorf("pods: move: fencing shop %d on %s (waiting at most %v for its writes in flight): %w", p.ShopID, pl.Pod, p.FenceWait, err))
	}
	rep.FenceWait = time.Since(start)
	released := false
	release := func() {
		if !released {
			released = true
			if err := f.Release(context.WithoutCancel(ctx)); err != nil {
				log.Warn("pods: move: lifting the fence", "shop", p.ShopID, "pod", pl.Pod, "err", err)
			}
		}
	}
	defer release()
	sctx, cancel := context.WithTimeout(ctx, MoveStepTimeout)
	defer cancel()
	// Another move may have switched the shop while this one waited for
	// the fence.
	if again, err := m.Lookup(sctx, p.ShopID); err != nil {
		return nil, undoStream(fmt.Errorf("pods: move: reading shop %d's placement under the fence: %w", p.ShopID, err))
	} else if again.Pod != pl.Pod || again.Epoch != pl.Epoch {
		return nil, undoStream(fmt.Errorf("%w: %w: shop %d moved to %s meanwhile", ErrMoveRefused, ErrPlacementChanged, p.ShopID, again.Pod))
	}
	if err := hook("fenced"); err != nil {
		return nil, undoStream(err)
	}
	undo := func(cause error) error {
		uctx := context.WithoutCancel(ctx)
		var errs []error
		if err := stopStream(); err != nil {
			errs = append(errs, fmt.Errorf("ending the stream: %w", err))
		}
		if err := dst.Discard(uctx, p.ShopID); err != nil && !errors.Is(err, ErrMoveRefused) {
			errs = append(errs, fmt.Errorf("deleting the target's copy: %w", err))
		}
		if err := src.Restore(uctx, p.ShopID); err != nil {
			errs = append(errs, fmt.Errorf("unmarking the source: %w", err))
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w: %w; undoing it failed too: %w", ErrMoveIncomplete, cause, errors.Join(errs...))
		}
		return cause
	}

	// The source's digest is taken while the copy runs: the fence keeps
	// the shop's rows there as they are (its writes are refused), so the
	// verify after the copy only reads the target.
	type digest struct {
		d   []TableDigest
		err error
	}
	srcDigest := make(chan digest, 1)
	go func() {
		d, err := src.Digest(sctx, p.ShopID)
		srcDigest <- digest{d, err}
	}()
	t := time.Now()
	var rows int64
	if stream != nil {
		err = stream.CatchUp(sctx, f)
	} else {
		rows, err = src.Copy(sctx, f, dst, pl.Pod)
	}
	rep.Copy = time.Since(t)
	if err == nil {
		err = hook("copied")
	}
	if err != nil {
		<-srcDigest
		return nil, undo(fmt.Errorf("pods: move: copying shop %d from %s to %s: %w", p.ShopID, pl.Pod, p.To, err))
	}
	t = time.Now()
	b, err := dst.Digest(sctx, p.ShopID)
	sd := <-srcDigest
	a := sd.d
	if err == nil {
		err = sd.err
	}
	rep.Verify = time.Since(t)
	if err != nil {
		return nil, undo(fmt.Errorf("pods: move: verifying shop %d: %w", p.ShopID, err))
	}
	if diff := compareDigests(a, b); diff != "" {
		return nil, undo(fmt.Errorf("%w: shop %d: %s", ErrMoveMismatch, p.ShopID, diff))
	}
	rep.Tables = a
	if stream != nil {
		for _, d := range a {
			rows += d.Rows
		}
	}
	rep.Rows = rows
	if err := hook("verified"); err != nil {
		return nil, undo(err)
	}
	if err := src.Tombstone(sctx, p.ShopID, p.To); err == nil {
		if err := hook("gone"); err != nil {
			return nil, undo(err)
		}
	} else {
		return nil, undo(fmt.Errorf("pods: move: marking shop %d gone on %s: %w", p.ShopID, pl.Pod, err))
	}
	t = time.Now()
	npl, err := m.Switch(sctx, p.ShopID, pl.Pod, pl.Epoch, p.To)
	if err != nil {
		// Did it commit? Read the map back.
		now, lerr := m.Lookup(context.WithoutCancel(sctx), p.ShopID)
		switch {
		case lerr == nil && now.Pod == pl.Pod && now.Epoch == pl.Epoch:
			return nil, undo(fmt.Errorf("pods: move: switching shop %d: %w", p.ShopID, err))
		case lerr == nil && now.Pod == p.To && now.Epoch == pl.Epoch+1:
			npl = now
		default:
			return nil, fmt.Errorf("%w: shop %d: switch: %v; reading the map back: %v, %+v", ErrMoveUnresolved, p.ShopID, err, lerr, now)
		}
	}
	rep.Switch = time.Since(t)
	rep.Epoch = npl.Epoch
	if p.Router != nil {
		p.Router.Invalidate(p.ShopID)
	}
	if err := dst.Accept(context.WithoutCancel(sctx), p.ShopID); err != nil {
		// The map says the target; the target refuses until accepted. Safe,
		// not available: pods abort (or the move again) accepts it.
		return rep, fmt.Errorf("%w: shop %d switched to %s, which did not accept it yet: %w", ErrMoveUnresolved, p.ShopID, p.To, err)
	}
	rep.Fence = time.Since(start)
	release()
	if err := hook("switched"); err != nil {
		return rep, err
	}
	log.Info("pods: shop moved", "shop", p.ShopID, "from", pl.Pod, "to", p.To, "method", rep.Method, "rows", rows, "fence_ms", rep.Fence.Milliseconds())
	// The stream ends before the purge: the source's deletes must not
	// reach the target.
	if err := stopStream(); err != nil {
		return rep, fmt.Errorf("pods: move: shop %d moved; ending its stream (run pods abort to clean up; the source's rows stay until then): %w", p.ShopID, err)
	}

	if p.PurgeDelay > 0 {
		select {
		case <-ctx.Done():
			return rep, nil // purged by pods abort or a later purge
		case <-time.After(p.PurgeDelay):
		}
		t = time.Now()
		n, err := PurgeMoved(ctx, src, p.ShopID)
		rep.Purged, rep.Purge = n, time.Since(t)
		if err != nil {
			return rep, fmt.Errorf("pods: move: shop %d moved; purging its rows on %s: %w", p.ShopID, pl.Pod, err)
		}
	}
	return rep, nil
}

// PurgeMoved deletes, in batches of PurgeBatch, the rows of a shop that
// moved away from the pod of s (FenceGone there), and answers how many.
func PurgeMoved(ctx context.Context, s MoveStore, shopID int64) (int64, error) {
	var total int64
	for {
		n, err := s.Purge(ctx, shopID, PurgeBatch)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

func (p MoveParams) mapOf() (Map, error) {
	switch {
	case p.Map != nil:
		return p.Map, nil
	case p.Router != nil:
		return p.Router.m, nil
	}
	return nil, fmt.Errorf("%w: a move needs the map", ErrMoveRefused)
}

func compareDigests(a, b []TableDigest) string {
	bm := map[string]TableDigest{}
	for _, d := range b {
		bm[d.Table] = d
	}
	for _, d := range a {
		o, ok := bm[d.Table]
		switch {
		case !ok:
			return fmt.Sprintf("table %s missing on the target", d.Table)
		case o.Rows != d.Rows:
			return fmt.Sprintf("table %s: %d rows on the source, %d on the target", d.Table, d.Rows, o.Rows)
		case o.Hash != d.Hash:
			return fmt.Sprintf("table %s: %d rows on both, different contents", d.Table, d.Rows)
		}
		delete(bm, d.Table)
	}
	for t := range bm {
		return fmt.Sprintf("table %s only on the target", t)
	}
	return ""
}

// AbortReport is what Abort undid.
type AbortReport struct {
	ShopID    int64    `json:"shop_id"`
	Pod       string   `json:"pod"` // where the map places the shop (authoritative)
	Discarded []string `json:"discarded,omitempty"`
	Restored  bool     `json:"restored"`
	Accepted  bool     `json:"accepted"`
	Purged    int64    `json:"purged"`
}

// Abort resolves a move that stopped (its process died, or it failed and
// could not undo itself) from the map, which is the truth: on the pod the
// map places the shop, the shop is served (a gone or incoming mark
// lifted); on every other pod, a copy marked incoming is deleted, and
// the rows of a copy marked gone (a move that switched but did not purge)
// are purged. Do not run it while a move of the shop is running.
func Abort(ctx context.Context, m Map, stores map[string]MoveStore, shopID int64) (*AbortReport, error) {
	pl, err := m.Lookup(ctx, shopID)
	if err != nil {
		return nil, fmt.Errorf("pods: abort: reading shop %d's placement: %w", shopID, err)
	}
	rep := &AbortReport{ShopID: shopID, Pod: pl.Pod}
	home := stores[pl.Pod]
	if home == nil {
		return nil, fmt.Errorf("%w: no store for pod %s", ErrUnknownPod, pl.Pod)
	}
	// A streamed move's subscription, publication and slots: twice over
	// every pod, as a source's slot can be dropped only once its
	// subscriber let go of it.
	for pass := range 2 {
		for name, s := range stores {
			if st, ok := s.(Streamer); ok {
				if err := st.DropStreams(ctx, shopID); err != nil && pass == 1 {
					return rep, fmt.Errorf("pods: abort: dropping the shop's stream on %s: %w", name, err)
				}
			}
		}
	}
	for name, s := range stores {
		if name == pl.Pod {
			continue
		}
		st, err := s.FenceState(ctx, shopID)
		if err != nil {
			return rep, fmt.Errorf("pods: abort: pod %s: %w", name, err)
		}
		if st == FenceIncoming {
			if err := s.Discard(ctx, shopID); err != nil {
				return rep, fmt.Errorf("pods: abort: deleting the copy on %s: %w", name, err)
			}
			rep.Discarded = append(rep.Discarded, name)
		}
		if st == FenceGone {
			n, err := PurgeMoved(ctx, s, shopID)
			rep.Purged += n
			if err != nil {
				return rep, fmt.Errorf("pods: abort: purging the moved shop's rows on %s: %w", name, err)
			}
		}
	}
	switch st, err := home.FenceState(ctx, shopID); {
	case err != nil:
		return rep, err
	case st == FenceGone:
		rep.Restored = true
		err = home.Restore(ctx, shopID)
	case st == FenceIncoming:
		rep.Accepted = true
		err = home.Accept(ctx, shopID)
	}
	return rep, err
}
