package bench

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast/bench/hotbench"
)

// The load loops: prewarming a pool, then clients running an op for a timed
// window (timed) or a number of attempts (counted).

// prewarm opens n connections so the first attempts do not pay for them.
func prewarm(ctx context.Context, pool *pgxpool.Pool, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// timed runs op from clients goroutines: warmup, then window measured.
// Every tick (when positive) onTick gets the holds of the window so far and
// the time since the window began.
func (r *runner) timed(ctx context.Context, pool *pgxpool.Pool, db, label string, clients int, warmup, window time.Duration, do op, tick time.Duration, onTick func(holds int64, elapsed time.Duration)) (*measurement, error) {
	if err := prewarm(ctx, pool, clients); err != nil {
		return nil, err
	}
	from := time.Now().Add(warmup)
	to := from.Add(window)
	var stop atomic.Bool
	var live atomic.Int64
	ts := make([]*tally, clients)
	var wg sync.WaitGroup
	for i := range ts {
		t := &tally{}
		ts[i] = t
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
			for !stop.Load() && ctx.Err() == nil {
				t0 := time.Now()
				units, err := do(ctx, rng)
				t1 := time.Now()
				in := !t0.Before(from) && !t1.After(to)
				t.record(units, err, t1.Sub(t0), in)
				if in && err == nil {
					live.Add(1)
				}
			}
		}(uint64(i))
	}
	sampler := r.sample(ctx, db, from, to)
	statConn := r.statConn(ctx)
	defer closeConn(statConn)
	var cpu0 cpuSample
	var probe *hotbench.Probe
	started := false
	nextTick := from.Add(tick)
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for now := time.Now(); now.Before(to) && ctx.Err() == nil; now = time.Now() {
		if !started && !now.Before(from) {
			probe = hotbench.StartProbe(ctx, r.meter)
			cpu0, started = readCPU(ctx, statConn, db), true
		}
		if tick > 0 && !now.Before(nextTick) {
			onTick(live.Load(), now.Sub(from))
			nextTick = nextTick.Add(tick)
		}
		if now.Before(from) {
			r.progress("%s warmup %4.1fs", label, warmup.Seconds()-from.Sub(now).Seconds())
		} else {
			r.progress("%s %5.1fs/%.0fs  holds %d", label, now.Sub(from).Seconds(), window.Seconds(), live.Load())
		}
		select {
		case <-ticker.C:
		case <-ctx.Done():
		}
	}
	cpu1 := readCPU(ctx, statConn, db)
	if probe != nil {
		probe.Stop(ctx)
	}
	if tick > 0 {
		onTick(live.Load(), time.Since(from))
	}
	stop.Store(true)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := merge(ts)
	m.window = window
	m.waits = <-sampler
	m.goCPU, m.pgCPU, m.otherCPU = cpuShare(cpu0, cpu1)
	m.probe, m.backend = probe, backendCPU(cpu0, cpu1)
	return m, nil
}

// counted runs attempts ops from each of clients goroutines, all released
// at once, and measures the time until every attempt is answered: a fixed
// amount of work, whatever the machine's speed. When tickEvery is positive,
// onTick gets the successes so far and the time since the release each
// time the clients together have made another tickEvery attempts.
func (r *runner) counted(ctx context.Context, pool *pgxpool.Pool, db, label string, clients, attempts int, do op, tickEvery int64, onTick func(holds int64, elapsed time.Duration)) (*measurement, error) {
	if err := prewarm(ctx, pool, clients); err != nil {
		return nil, err
	}
	total := int64(clients) * int64(attempts)
	r.progress("%s %d x %d attempts", label, clients, attempts)
	var ticks chan struct{}
	if tickEvery > 0 {
		// Room for every tick: a worker never blocks on a slow sampler.
		ticks = make(chan struct{}, total/tickEvery+1)
	}
	var done, live atomic.Int64
	ts := make([]*tally, clients)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ts {
		t := &tally{}
		ts[i] = t
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			<-gate
			for range attempts {
				if ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				units, err := do(ctx, rng)
				t.record(units, err, time.Since(t0), true)
				if err == nil {
					live.Add(1)
				}
				if n := done.Add(1); ticks != nil && n%tickEvery == 0 {
					ticks <- struct{}{}
				}
			}
		}(uint64(i))
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	sampleCtx, cancel := context.WithCancel(ctx)
	sampler := r.sample(sampleCtx, db, time.Now(), time.Now().Add(time.Hour))
	statConn := r.statConn(ctx)
	defer closeConn(statConn)
	probe := hotbench.StartProbe(ctx, r.meter)
	cpu0 := readCPU(ctx, statConn, db)
	start := time.Now()
	close(gate)
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for running := true; running; {
		select {
		case <-ticks:
			onTick(live.Load(), time.Since(start))
		case <-ticker.C:
			r.progress("%s %5.1fs  %d/%d attempts  holds %d", label, time.Since(start).Seconds(), done.Load(), total, live.Load())
		case <-finished:
			running = false
		}
	}
	elapsed := time.Since(start)
	for len(ticks) > 0 {
		<-ticks
		onTick(live.Load(), elapsed)
	}
	cpu1 := readCPU(ctx, statConn, db)
	probe.Stop(ctx)
	cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := merge(ts)
	m.elapsed = elapsed
	m.waits = <-sampler
	m.goCPU, m.pgCPU, m.otherCPU = cpuShare(cpu0, cpu1)
	m.probe, m.backend = probe, backendCPU(cpu0, cpu1)
	return m, nil
}
