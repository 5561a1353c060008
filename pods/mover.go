package pods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Bounds of a Mover.
const (
	// MovesRunningDefault is how many moves a Mover runs at once unless
	// MoverConfig.Running says otherwise; MovesRunningMax bounds it. Each
	// move holds a few connections on its two pods and, fenced, the
	// shop's writes: moves are an operator's, few at a time.
	MovesRunningDefault = 2
	MovesRunningMax     = 8
	// MoveRecordsMax bounds the ended moves a Mover remembers (Moves); the
	// oldest are forgotten first.
	MoveRecordsMax = 100
)

// States of a move a Mover runs (MoveState.State).
const (
	// MoveStateRunning: the move runs (MoveState.Step says how far).
	MoveStateRunning = "running"
	// MoveStateDone: the shop switched to the target (MoveState.Report);
	// MoveState.Err is set when a step after the switch failed (the
	// stream's end, the purge: pods abort finishes them).
	MoveStateDone = "done"
	// MoveStateFailed: the move stopped before the switch and was undone
	// (or refused): the shop is served by its source (MoveState.Err).
	MoveStateFailed = "failed"
	// MoveStateUnresolved: ErrMoveUnresolved — the shop's writes are
	// refused until an abort resolves the move from the map.
	MoveStateUnresolved = "unresolved"
)

// Errors of a Mover's StartMove.
var (
	// ErrMoveRunning: a move (or an abort) of the shop runs in this Mover;
	// at most one runs per shop.
	ErrMoveRunning = errors.New("pods: a move of the shop is running")
	// ErrMovesFull: the Mover runs as many moves as it may
	// (MoverConfig.Running); start this one when one ends.
	ErrMovesFull = errors.New("pods: as many moves as allowed are running")
	// ErrSamePod: the shop is on the target pod already. It matches
	// ErrMoveRefused.
	ErrSamePod = fmt.Errorf("%w: the shop is on the target pod already", ErrMoveRefused)
	// ErrMoverStopped: the Mover was stopped (the server shuts down).
	ErrMoverStopped = errors.New("pods: the mover is stopped")
)

// MoverConfig configures a Mover.
type MoverConfig struct {
	// Router is the deployment's router: its map, its pods' health, and
	// its cache, dropped at a switch. Required.
	Router *Router
	// Stores are the pods' move stores, by name. Required.
	Stores map[string]MoveStore
	// Running bounds the moves at once: MovesRunningDefault when 0, at
	// most MovesRunningMax.
	Running int
	// FenceWait and PurgeDelay are each move's (MoveParams).
	FenceWait  time.Duration
	PurgeDelay time.Duration
	// Check, when set, vets a move before it starts — serve's: the two
	// pods run the same engine. Its error refuses the move; wrap
	// ErrMoveRefused.
	Check func(shopID int64, from, to string) error
	// BeforeFence, when set, runs as MoveParams.BeforeFence (tests hold a
	// move there).
	BeforeFence func(ctx context.Context, shopID int64) error
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// MoveState is a move a Mover runs or ran.
type MoveState struct {
	ID     int64
	ShopID int64
	From   string
	To     string
	// Method is as asked: MethodAuto, MethodStream or MethodCopy
	// (Report.Method says how the rows went).
	Method string
	State  string
	// Step is the last step the move reached: "starting" (a streamed
	// move's copy ahead of the fence), "fencing", "fenced", "copied",
	// "verified", "gone", "switched" (then the purge).
	Step      string
	StartedAt time.Time
	EndedAt   time.Time // zero while running
	// Aborted: the move was cancelled by AbortMove.
	Aborted bool
	Report  *MoveReport
	Err     error
}

// Mover runs shop moves in the background for a server: at most one per
// shop and Running at once, each a Move; it remembers the last
// MoveRecordsMax that ended. Stop cancels the moves running and waits for
// them: a move cancelled before its switch is undone (the shop served by
// its source), after it, its purge is left to pods abort. It is safe for
// concurrent use; the zero value is not usable: call NewMover.
type Mover struct {
	cfg    MoverConfig
	log    *slog.Logger
	ctx    context.Context // the moves'; cancelled by Stop
	cancel context.CancelFunc

	mu       sync.Mutex
	nextID   int64
	running  map[int64]*moveRun // by shop
	aborting map[int64]bool     // shops an AbortMove resolves
	all      []*moveRun         // by id, oldest first
	stopped  bool
	wg       sync.WaitGroup
}

type moveRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	st     MoveState // under Mover.mu
}

// NewMover returns a Mover over cfg's router and stores.
func NewMover(cfg MoverConfig) (*Mover, error) {
	switch {
	case cfg.Router == nil:
		return nil, errors.New("pods: a mover needs the router")
	case len(cfg.Stores) == 0:
		return nil, errors.New("pods: a mover needs the pods' move stores")
	case cfg.Running < 0 || cfg.Running > MovesRunningMax:
		return nil, fmt.Errorf("pods: a mover runs between 1 and %d moves at once", MovesRunningMax)
	case cfg.Running == 0:
		cfg.Running = MovesRunningDefault
	}
	m := &Mover{cfg: cfg, log: cfg.Logger, running: map[int64]*moveRun{}, aborting: map[int64]bool{}}
	if m.log == nil {
		m.log = slog.Default()
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Start does nothing: moves start with StartMove. With Stop it makes a
// Mover a server's worker.
func (m *Mover) Start(context.Context) {}

// Stop refuses new moves, cancels the running ones and waits, at most
// until ctx ends, for them to end (undone before their switch). It is
// idempotent.
func (m *Mover) Stop(ctx context.Context) error {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pods: moves still undoing at shutdown (run pods abort for their shops): %w", ctx.Err())
	}
}

// Pods answers the pods the map knows, with their shop counts.
func (m *Mover) Pods(ctx context.Context) ([]PodInfo, error) { return m.cfg.Router.m.Pods(ctx) }

// Status answers the router's view of each configured pod's health.
func (m *Mover) Status() []PodStatus { return m.cfg.Router.Status() }

// Placement answers the shop's placement, read from the map (not a
// router's cache); ErrUnassigned when it has none.
func (m *Mover) Placement(ctx context.Context, shopID int64) (Placement, error) {
	return m.cfg.Router.m.Lookup(ctx, shopID)
}

// StartMove checks a move of the shop to pod to by method and starts it in
// the background, answering its state. ErrUnknownPod: to has no store
// here; ErrUnassigned: the shop is nowhere; ErrSamePod; ErrMoveRunning;
// ErrMovesFull; ErrMoveRefused (MoverConfig.Check, or an unknown method);
// ErrMoverStopped. None of them changed anything.
func (m *Mover) StartMove(ctx context.Context, shopID int64, to, method string) (MoveState, error) {
	if method != MethodAuto && method != MethodStream && method != MethodCopy {
		return MoveState{}, fmt.Errorf("%w: method %q (want %q, %q or empty)", ErrMoveRefused, method, MethodStream, MethodCopy)
	}
	if m.cfg.Stores[to] == nil {
		return MoveState{}, fmt.Errorf("%w: %s", ErrUnknownPod, to)
	}
	pl, err := m.cfg.Router.m.Lookup(ctx, shopID)
	if err != nil {
		return MoveState{}, err
	}
	if pl.Pod == to {
		return MoveState{}, fmt.Errorf("%w: shop %d is on pod %s", ErrSamePod, shopID, to)
	}
	if m.cfg.Stores[pl.Pod] == nil {
		return MoveState{}, fmt.Errorf("%w: %w: shop %d is on pod %s, which has no store here", ErrMoveRefused, ErrUnknownPod, shopID, pl.Pod)
	}
	if m.cfg.Check != nil {
		if err := m.cfg.Check(shopID, pl.Pod, to); err != nil {
			return MoveState{}, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.stopped:
		return MoveState{}, ErrMoverStopped
	case m.running[shopID] != nil || m.aborting[shopID]:
		return MoveState{}, fmt.Errorf("%w: shop %d", ErrMoveRunning, shopID)
	case len(m.running) >= m.cfg.Running:
		return MoveState{}, fmt.Errorf("%w: %d", ErrMovesFull, m.cfg.Running)
	}
	m.nextID++
	mctx, cancel := context.WithCancel(m.ctx)
	r := &moveRun{cancel: cancel, done: make(chan struct{}), st: MoveState{ID: m.nextID, ShopID: shopID, From: pl.Pod, To: to,
		Method: method, State: MoveStateRunning, Step: "starting", StartedAt: time.Now()}}
	m.running[shopID] = r
	m.all = append(m.all, r)
	m.wg.Add(1)
	go m.run(mctx, r)
	return r.st, nil
}

func (m *Mover) run(ctx context.Context, r *moveRun) {
	defer m.wg.Done()
	defer close(r.done)
	defer r.cancel()
	step := func(s string) error {
		m.mu.Lock()
		r.st.Step = s
		m.mu.Unlock()
		return nil
	}
	shop := r.st.ShopID
	p := MoveParams{ShopID: shop, To: r.st.To, Stores: m.cfg.Stores, Method: r.st.Method, Router: m.cfg.Router,
		FenceWait: m.cfg.FenceWait, PurgeDelay: m.cfg.PurgeDelay, Logger: m.log,
		BeforeFence: func(ctx context.Context) error {
			_ = step("fencing")
			if m.cfg.BeforeFence != nil {
				return m.cfg.BeforeFence(ctx, shop)
			}
			return nil
		}}
	m.log.Info("pods: move started", "move", r.st.ID, "shop", shop, "from", r.st.From, "to", r.st.To)
	rep, err := observedMove(ctx, p, step)
	m.mu.Lock()
	defer m.mu.Unlock()
	r.st.Report, r.st.Err, r.st.EndedAt = rep, err, time.Now()
	switch MoveResult(ctx, rep, err) {
	case MoveResultUnresolved:
		r.st.State = MoveStateUnresolved
	case MoveResultMoved:
		r.st.State = MoveStateDone
	default:
		r.st.State = MoveStateFailed
	}
	if err != nil {
		m.log.Warn("pods: move ended", "move", r.st.ID, "shop", shop, "state", r.st.State, "err", err)
	}
	delete(m.running, shop)
	m.trim()
}

// trim forgets the oldest ended moves past MoveRecordsMax; under mu.
func (m *Mover) trim() {
	ended := 0
	for _, r := range m.all {
		if r.st.State != MoveStateRunning {
			ended++
		}
	}
	m.all = slices.DeleteFunc(m.all, func(r *moveRun) bool {
		if ended > MoveRecordsMax && r.st.State != MoveStateRunning {
			ended--
			return true
		}
		return false
	})
}

// MoveByID answers the move with id, if it runs or is remembered.
func (m *Mover) MoveByID(id int64) (MoveState, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.all {
		if r.st.ID == id {
			return r.st, true
		}
	}
	return MoveState{}, false
}

// Moves answers the moves running and the last ones that ended, newest
// first.
func (m *Mover) Moves() []MoveState {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MoveState, 0, len(m.all))
	for i := len(m.all) - 1; i >= 0; i-- {
		out = append(out, m.all[i].st)
	}
	return out
}

// AbortMove aborts the shop's move: it cancels the move running here, if
// any, and waits for it to end (undone when before its switch), then
// resolves what any move of the shop left from the map (Abort). It
// answers Abort's report and the move it cancelled (nil: none ran). No
// move of the shop starts meanwhile (ErrMoveRunning).
func (m *Mover) AbortMove(ctx context.Context, shopID int64) (*AbortReport, *MoveState, error) {
	m.mu.Lock()
	if m.aborting[shopID] {
		m.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: an abort of shop %d runs", ErrMoveRunning, shopID)
	}
	r := m.running[shopID]
	m.aborting[shopID] = true
	if r != nil {
		r.st.Aborted = true
	}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.aborting, shopID)
		m.mu.Unlock()
	}()
	var cancelled *MoveState
	if r != nil {
		r.cancel()
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("pods: abort: waiting for move %d of shop %d to undo: %w", r.st.ID, shopID, ctx.Err())
		}
		m.mu.Lock()
		st := r.st
		m.mu.Unlock()
		cancelled = &st
	}
	rep, err := Abort(ctx, m.cfg.Router.m, m.cfg.Stores, shopID)
	return rep, cancelled, err
}
