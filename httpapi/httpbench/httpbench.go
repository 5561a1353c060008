// Package httpbench measures the service against the library and against
// the HTTP ceiling in one run (`holdfast bench --http`): the hot scenario
// — one hot key, Clients concurrent clients, distinct checkouts, quantity
// 1 — through
//
//   - the library: postgres.Client (strategy batch, the default) in this
//     process;
//   - the service: a real `holdfast serve` in a separate process, built
//     from this module with `go build` (or Options.Binary), on the same
//     database;
//   - the ceiling: httpapi.Ceiling, the same HTTP handling with no
//     database, in this process.
//
// The load generator runs in this process for all three. Then, optionally
// (Options.Fairness), one shop's steady load is measured alone and during
// another shop's flash sale at Clients clients on the service.
//
// Soak (`holdfast bench --http --soak`) runs the service side alone for an
// hour, sampling it, serve's process and the database every minute.
package httpbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/migrations"
)

// Options configure a run. The zero value of each field but DatabaseURL
// means its default.
type Options struct {
	// DatabaseURL is the database both the library and `serve` use; its
	// schema is migrated. Use a private cluster: the run writes holds.
	DatabaseURL string
	// Binary is the holdfast binary to serve with. Empty: built from this
	// module into a temporary directory.
	Binary string
	// Clients is the number of concurrent clients. Defaults to 64.
	Clients int
	// Duration is each side's measured time. Defaults to 10s.
	Duration time.Duration
	// Warmup precedes each side's measurement. Defaults to 1s.
	Warmup time.Duration
	// MaxConns is the database pool of the library and of serve.
	// Defaults to 20 (serve's default).
	MaxConns int
	// ServeArgs are extra `serve` flags. HOLDFAST_HTTPBENCH_SERVE_ARGS
	// (split at spaces) adds more, e.g. "--metrics-addr 127.0.0.1:6061
	// --pprof" to profile serve during a run.
	ServeArgs []string
	// Fairness adds the flash-sale run: a steady shop (SteadyClients
	// clients) alone, then during another shop's sale at Clients.
	Fairness      bool
	SteadyClients int
	// Log receives progress lines and serve's stderr. Defaults to
	// io.Discard.
	Log io.Writer
	// Breakdown adds two sides that say where the service's extra time
	// goes: the library with its workers started (serve runs them: the
	// sweeper, replenisher, waitlist server and event sequencer), and a
	// second serve with --log-errors-only (no access-log line per
	// success). Also set by HOLDFAST_HTTPBENCH_BREAKDOWN=1.
	Breakdown bool
}

func (o Options) withDefaults() Options {
	if o.Clients <= 0 {
		o.Clients = 64
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 20
	}
	if o.SteadyClients <= 0 {
		o.SteadyClients = 4
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Side is one side's figures.
type Side struct {
	Name     string
	Ops      int64 // successful reservations
	PerSec   float64
	P50, P99 time.Duration
	// Statuses counts the HTTP statuses ("201", "503", ...) or, for the
	// library, the error kinds ("ok", "insufficient_stock", ...).
	Statuses map[string]int64
	// CPU per answer over the measured window, in microseconds (cpu.go):
	// this process (the load generator, and the library's engine on the
	// library side), serve's process, and the database's backends (0
	// when not measured: no serve, or a server on another machine).
	SelfCPUus, ServeCPUus, DBCPUus float64
}

// Report is a run's result.
type Report struct {
	Clients                   int
	Duration                  time.Duration
	Library, Service, Ceiling Side
	// With Options.Breakdown: the library with its workers, and serve
	// with --log-errors-only.
	LibraryWorkers, ServiceQuiet *Side
	// With Options.Fairness: the steady shop's p99 alone and during the
	// other shop's sale, and the sale's statuses.
	SteadySolo, SteadyDuringSale, Sale *Side
}

// Refused is how many of a side's answers were 503.
func (s Side) Refused() int64 { return s.Statuses["503"] }

func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hot, %d clients, %v each\n", r.Clients, r.Duration)
	fmt.Fprintf(&b, "%-10s %10s %10s %10s  %s\n", "side", "holds/s", "p50", "p99", "answers")
	for _, s := range []Side{r.Library, r.Service, r.Ceiling} {
		fmt.Fprintf(&b, "%-10s %10.0f %10v %10v  %v\n", s.Name, s.PerSec, s.P50.Round(time.Microsecond*10), s.P99.Round(time.Microsecond*10), s.Statuses)
	}
	if r.Library.PerSec > 0 && r.Ceiling.PerSec > 0 {
		fmt.Fprintf(&b, "service/library %.2f×, service/ceiling %.2f×\n", r.Service.PerSec/r.Library.PerSec, r.Service.PerSec/r.Ceiling.PerSec)
	}
	sides := []Side{r.Library, r.Service, r.Ceiling}
	if r.LibraryWorkers != nil && r.ServiceQuiet != nil {
		for _, s := range []*Side{r.LibraryWorkers, r.ServiceQuiet} {
			fmt.Fprintf(&b, "%-10s %10.0f %10v %10v  %v\n", s.Name, s.PerSec, s.P50.Round(time.Microsecond*10), s.P99.Round(time.Microsecond*10), s.Statuses)
		}
		if r.LibraryWorkers.PerSec > 0 {
			fmt.Fprintf(&b, "service/library with workers %.2f×, service --log-errors-only/library with workers %.2f×\n",
				r.Service.PerSec/r.LibraryWorkers.PerSec, r.ServiceQuiet.PerSec/r.LibraryWorkers.PerSec)
		}
		sides = append(sides, *r.LibraryWorkers, *r.ServiceQuiet)
	}
	fmt.Fprintf(&b, "CPU µs per answer   %8s %8s %8s %8s\n", "bench", "serve", "database", "total")
	for _, s := range sides {
		fmt.Fprintf(&b, "%-19s %8.1f %8.1f %8.1f %8.1f\n", s.Name, s.SelfCPUus, s.ServeCPUus, s.DBCPUus, s.SelfCPUus+s.ServeCPUus+s.DBCPUus)
	}
	if r.SteadySolo != nil {
		fmt.Fprintf(&b, "fairness: steady shop p99 alone %v, during a %d-client sale %v (%.2f×); sale answers %v\n",
			r.SteadySolo.P99.Round(time.Microsecond*10), r.Clients, r.SteadyDuringSale.P99.Round(time.Microsecond*10),
			float64(r.SteadyDuringSale.P99)/float64(max(1, r.SteadySolo.P99)), r.Sale.Statuses)
	}
	return b.String()
}

// Stock of each hot key: never the limit during a run.
const hotStock = 100_000_000

// Run runs the sides one after the other, in one run.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	o.Breakdown = o.Breakdown || os.Getenv("HOLDFAST_HTTPBENCH_BREAKDOWN") == "1"
	o.ServeArgs = append(slices.Clip(o.ServeArgs), strings.Fields(os.Getenv("HOLDFAST_HTTPBENCH_SERVE_ARGS"))...)
	if o.Breakdown && o.Fairness {
		return nil, errors.New("httpbench: Breakdown and Fairness are separate runs")
	}
	if o.DatabaseURL == "" {
		return nil, errors.New("httpbench: Options.DatabaseURL is required")
	}
	pcfg, err := pgxpool.ParseConfig(o.DatabaseURL)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = int32(o.MaxConns)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return nil, err
	}
	rep := &Report{Clients: o.Clients, Duration: o.Duration}

	// The library, shop 1.
	hc, err := postgres.New(pool, holdfast.Config{})
	if err != nil {
		return nil, err
	}
	k := holdfast.Key{ShopID: 1, ItemID: 1, LocationID: 1}
	if _, err := hc.SetAvailable(ctx, k, hotStock, "bench", ""); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Log, "library: hot, %d clients\n", o.Clients)
	cpu := &cpuSampler{pool: pool}
	rep.Library = measureCPU(ctx, cpu, "library", o.Clients, o.Warmup, o.Duration, func(ctx context.Context) (string, error) {
		_, err := hc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
		if err != nil {
			return "error", err
		}
		return "ok", nil
	})

	// The library's events get their cursors here, outside every window:
	// serve's sequencer would otherwise spend the service's window on
	// them (a backlog of one library side: 10,000 and more events).
	if err := drainEvents(ctx, hc); err != nil {
		return nil, err
	}

	// The service, shop 2, in its own process.
	srv, client, key2, err := startService(ctx, o)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	fmt.Fprintf(o.Log, "service: hot, %d clients, %s\n", o.Clients, srv.url)
	cpu.servePID = srv.cmd.Process.Pid
	rep.Service = measureCPU(ctx, cpu, "service", o.Clients, o.Warmup, o.Duration, reserver(client, srv.url, key2, 2))
	cpu.servePID = 0

	// The ceiling, in this process.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ceil, err := httpapi.Ceiling(key2, 2, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- ceil.Serve(cctx, ln) }()
	fmt.Fprintf(o.Log, "ceiling: hot, %d clients\n", o.Clients)
	rep.Ceiling = measureCPU(ctx, &cpuSampler{}, "ceiling", o.Clients, o.Warmup, o.Duration, reserver(client, "http://"+ln.Addr().String(), key2, 2))
	cancel()
	if err := <-served; err != nil {
		return nil, err
	}

	if o.Breakdown {
		// The library as an application runs it, with its workers (and
		// nothing of the service's left for them to sequence).
		if err := drainEvents(ctx, hc); err != nil {
			return nil, err
		}
		hc.Start(ctx)
		fmt.Fprintf(o.Log, "library with workers: hot, %d clients\n", o.Clients)
		lw := measureCPU(ctx, &cpuSampler{pool: pool}, "lib+workers", o.Clients, o.Warmup, o.Duration, func(ctx context.Context) (string, error) {
			_, err := hc.Reserve(ctx, holdfast.ReserveParams{ShopID: 1, CheckoutID: uuid.New(), Lines: []holdfast.Line{{ItemID: 1, LocationID: 1, Quantity: 1}}})
			if err != nil {
				return "error", err
			}
			return "ok", nil
		})
		if err := hc.Stop(ctx); err != nil {
			return nil, err
		}
		rep.LibraryWorkers = &lw
		// serve without the access-log line of each success.
		srv.stop()
		qo := o
		qo.ServeArgs = append(slices.Clip(o.ServeArgs), "--log-errors-only")
		qsrv, err := startServe(ctx, qo)
		if err != nil {
			return nil, err
		}
		defer qsrv.stop()
		fmt.Fprintf(o.Log, "service --log-errors-only: hot, %d clients, %s\n", o.Clients, qsrv.url)
		qs := measureCPU(ctx, &cpuSampler{pool: pool, servePID: qsrv.cmd.Process.Pid}, "svc quiet", o.Clients, o.Warmup, o.Duration, reserver(client, qsrv.url, key2, 2))
		rep.ServiceQuiet = &qs
		return rep, nil
	}

	if o.Fairness {
		key3, err := srv.key(ctx, 3)
		if err != nil {
			return nil, err
		}
		if err := setStock(ctx, client, srv.url, key3, 3); err != nil {
			return nil, err
		}
		steady := reserver(client, srv.url, key3, 3)
		fmt.Fprintf(o.Log, "fairness: shop 3 steady at %d clients alone\n", o.SteadyClients)
		solo := measure(ctx, "steady alone", o.SteadyClients, o.Warmup, o.Duration, steady)
		rep.SteadySolo = &solo
		fmt.Fprintf(o.Log, "fairness: shop 3 steady during shop 2's sale at %d clients\n", o.Clients)
		saleCtx, stopSale := context.WithCancel(ctx)
		saleDone := make(chan Side, 1)
		go func() {
			saleDone <- measure(saleCtx, "sale", o.Clients, 0, o.Warmup+o.Duration+time.Second, reserver(client, srv.url, key2, 2))
		}()
		during := measure(ctx, "steady during sale", o.SteadyClients, o.Warmup, o.Duration, steady)
		stopSale()
		sale := <-saleDone
		rep.SteadyDuringSale, rep.Sale = &during, &sale
	}
	return rep, nil
}

// drainEvents sequences every committed event, so that the next side's
// window pays only for its own.
func drainEvents(ctx context.Context, hc *postgres.Client) error {
	for {
		n, err := hc.SequenceEvents(ctx)
		if err != nil || n == 0 {
			return err
		}
	}
}

// Measure runs clients loops of op for warmup, then counts for d.
func Measure(ctx context.Context, name string, clients int, warmup, d time.Duration, op func(context.Context) (string, error)) Side {
	return measure(ctx, name, clients, warmup, d, op)
}

// Reserver returns an op reserving one unit of (shop, 1, 1) over HTTP at
// base with key, for Measure.
func Reserver(c *http.Client, base, key string, shop int64) func(context.Context) (string, error) {
	return reserver(c, base, key, shop)
}

func measure(ctx context.Context, name string, clients int, warmup, d time.Duration, op func(context.Context) (string, error)) Side {
	l := startLoad(ctx, clients, op)
	defer l.stop()
	wait(ctx, warmup)
	l.collect("warmup") // discarded
	wait(ctx, d)
	return l.collect(name)
}

// measureCPU is measure with the CPU per answer of the processes cpu
// samples over the measured window.
func measureCPU(ctx context.Context, cpu *cpuSampler, name string, clients int, warmup, d time.Duration, op func(context.Context) (string, error)) Side {
	l := startLoad(ctx, clients, op)
	defer l.stop()
	wait(ctx, warmup)
	l.collect("warmup") // discarded
	a := cpu.sample(ctx)
	wait(ctx, d)
	s := l.collect(name)
	s.perOp(a, cpu.sample(ctx))
	return s
}

func wait(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// load is clients loops of op, tallied per client from one collect to the
// next; Measure and Soak both drive it.
type load struct {
	stopped chan struct{}
	wg      sync.WaitGroup
	tallies []tally
	since   time.Time // of the current tally
	// answers counts every answer since the start; reached is signalled
	// (without blocking) on each answer once answers >= mark, for a
	// sample that ends after a number of answers.
	answers atomic.Int64
	mark    atomic.Int64
	reached chan struct{}
}

type tally struct {
	mu       sync.Mutex
	lat      []time.Duration // of successes
	statuses map[string]int64
}

func startLoad(ctx context.Context, clients int, op func(context.Context) (string, error)) *load {
	l := &load{stopped: make(chan struct{}), tallies: make([]tally, clients), since: time.Now(), reached: make(chan struct{}, 1)}
	l.mark.Store(math.MaxInt64)
	for i := range clients {
		l.tallies[i].statuses = map[string]int64{}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			t := &l.tallies[i]
			for {
				select {
				case <-l.stopped:
					return
				case <-ctx.Done():
					return
				default:
				}
				start := time.Now()
				st, err := op(ctx)
				took := time.Since(start)
				t.mu.Lock()
				if err == nil {
					t.lat = append(t.lat, took)
				}
				t.statuses[st]++
				t.mu.Unlock()
				if l.answers.Add(1) >= l.mark.Load() {
					select {
					case l.reached <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return l
}

// collect returns the figures since the last collect (or the start) and
// starts a new tally.
func (l *load) collect(name string) Side {
	s, _, _ := l.take(name)
	return s
}

// take is collect with the sorted latencies of the successes and the time
// the figures cover.
func (l *load) take(name string) (Side, []time.Duration, time.Duration) {
	now := time.Now()
	elapsed := now.Sub(l.since)
	l.since = now
	s := Side{Name: name, Statuses: map[string]int64{}}
	var lat []time.Duration
	for i := range l.tallies {
		t := &l.tallies[i]
		t.mu.Lock()
		lat = append(lat, t.lat...)
		for k, v := range t.statuses {
			s.Statuses[k] += v
		}
		t.lat, t.statuses = t.lat[:0], map[string]int64{}
		t.mu.Unlock()
	}
	s.Ops = int64(len(lat))
	s.PerSec = float64(s.Ops) / elapsed.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		s.P50, s.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return s, lat, elapsed
}

// waitAnswers waits until n more answers than now have come, or ctx ends.
func (l *load) waitAnswers(ctx context.Context, n int64) {
	m := l.answers.Load() + n
	l.mark.Store(m)
	defer l.mark.Store(math.MaxInt64)
	for l.answers.Load() < m {
		select {
		case <-l.reached: // may be stale: checked again
		case <-ctx.Done():
			return
		}
	}
}

func (l *load) stop() {
	close(l.stopped)
	l.wg.Wait()
}

// reserver returns an op reserving one unit of (shop, 1, 1) over HTTP.
func reserver(c *http.Client, base, key string, shop int64) func(context.Context) (string, error) {
	return reserverTTL(c, base, key, shop, 0)
}

// reserverTTL is reserver with holds of ttlSeconds (0: serve's default).
func reserverTTL(c *http.Client, base, key string, shop int64, ttlSeconds int) func(context.Context) (string, error) {
	url := fmt.Sprintf("%s/v1/shops/%d/reservations", base, shop)
	auth := "Bearer " + key
	tail := `}]}`
	if ttlSeconds > 0 {
		tail = fmt.Sprintf(`}],"ttl_seconds":%d}`, ttlSeconds)
	}
	return func(ctx context.Context) (string, error) {
		body := `{"checkout_id":"` + uuid.NewString() + `","lines":[{"item_id":1,"location_id":1,"quantity":1` + tail
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return "error", err
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		res, err := c.Do(req)
		if err != nil {
			return "transport", err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		st := fmt.Sprint(res.StatusCode)
		if res.StatusCode != http.StatusCreated {
			return st, errors.New(st)
		}
		return st, nil
	}
}

// startService starts serve (startServe), a client sized for o.Clients,
// and shop 2's key with hotStock units of (2, 1, 1). On an error serve is
// stopped; otherwise the caller stops it.
func startService(ctx context.Context, o Options) (*serve, *http.Client, string, error) {
	srv, err := startServe(ctx, o)
	if err != nil {
		return nil, nil, "", err
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConns: 4 * o.Clients, MaxIdleConnsPerHost: 2 * o.Clients, MaxConnsPerHost: 2 * o.Clients}}
	key, err := srv.key(ctx, 2)
	if err == nil {
		err = setStock(ctx, client, srv.url, key, 2)
	}
	if err != nil {
		srv.stop()
		return nil, nil, "", err
	}
	return srv, client, key, nil
}

func setStock(ctx context.Context, c *http.Client, base, key string, shop int64) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, fmt.Sprintf("%s/v1/shops/%d/inventory/1/1", base, shop),
		strings.NewReader(fmt.Sprintf(`{"available":%d,"reason":"bench"}`, hotStock)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("httpbench: set stock: %d %s", res.StatusCode, b)
	}
	return nil
}

// serve is a running `holdfast serve`.
type serve struct {
	bin, dbURL string
	url        string
	cmd        *exec.Cmd
	done       chan error
	tmp        string
	stopOnce   sync.Once
}

// Build builds cmd/holdfast into dir and returns the binary's path. It
// must run inside this module.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "holdfast")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/holdfast/holdfast/cmd/holdfast").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("httpbench: go build: %v\n%s", err, out)
	}
	return bin, nil
}

func startServe(ctx context.Context, o Options) (*serve, error) {
	s := &serve{bin: o.Binary, dbURL: o.DatabaseURL, done: make(chan error, 1)}
	if s.bin == "" {
		tmp, err := os.MkdirTemp("", "holdfast-httpbench-")
		if err != nil {
			return nil, err
		}
		s.tmp = tmp
		if s.bin, err = Build(ctx, tmp); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := append([]string{"serve", "--addr", addr, "--max-conns", fmt.Sprint(o.MaxConns), "--log-format", "json"}, o.ServeArgs...)
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Env = append(os.Environ(), "DATABASE_URL="+o.DatabaseURL)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		// Request lines are not progress: pass the rest on.
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if !bytes.Contains(sc.Bytes(), []byte(`"msg":"request"`)) {
				fmt.Fprintf(o.Log, "serve: %s\n", sc.Bytes())
			}
		}
		s.done <- s.cmd.Wait()
	}()
	s.url = "http://" + addr
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := http.Get(s.url + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("httpbench: serve exited: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("httpbench: serve did not become ready within a minute")
		}
	}
}

// key creates a key for shop with `holdfast keys create` (its last line).
func (s *serve) key(ctx context.Context, shop int64) (string, error) {
	cmd := exec.CommandContext(ctx, s.bin, "keys", "create", "--shop", fmt.Sprint(shop))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+s.dbURL)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("httpbench: keys create: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

func (s *serve) stop() { s.stopOnce.Do(s.stopNow) }

func (s *serve) stopNow() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
		}
	}
	if s.tmp != "" {
		_ = os.RemoveAll(s.tmp)
	}
}
