package httpbench_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/holdfast/holdfast/httpapi/httpbench"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestHTTPBench runs the three sides briefly (HOLDFAST_HTTPBENCH=1, or a client
// count, for the full figures; HOLDFAST_HTTPBENCH_DURATION per side) and checks every side served and the
// service turned nobody away. Speeds are reported, never asserted.
func TestHTTPBench(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three sides: not with -short")
	}
	t.Parallel()
	db := pgtest.DB(t, 4)
	o := httpbench.Options{DatabaseURL: db.URL, Clients: 8, Duration: time.Second, Warmup: 200 * time.Millisecond, Fairness: true}
	if os.Getenv("HOLDFAST_HTTPBENCH") != "" {
		o.Clients, o.Duration, o.Warmup = 64, 10*time.Second, time.Second
		if n, err := strconv.Atoi(os.Getenv("HOLDFAST_HTTPBENCH")); err == nil && n > 1 {
			o.Clients = n
		}
		if d, err := time.ParseDuration(os.Getenv("HOLDFAST_HTTPBENCH_DURATION")); err == nil {
			o.Duration = d
		}
		o.Log = os.Stderr
	}
	rep, err := httpbench.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	for _, s := range []httpbench.Side{rep.Library, rep.Service, rep.Ceiling, *rep.SteadySolo, *rep.SteadyDuringSale} {
		if s.Ops == 0 {
			t.Errorf("%s served nothing: %v", s.Name, s.Statuses)
		}
	}
	if n := rep.Service.Refused() + rep.Sale.Refused() + rep.SteadyDuringSale.Refused(); n != 0 {
		t.Errorf("the service answered 503 %d times", n)
	}
}

// TestHTTPBenchBreakdown runs the breakdown's sides briefly and checks each
// served and carries the CPU per answer of the processes it ran on: the
// load generator always, serve on the service sides, the database's
// backends (a local server here) on every side but the ceiling.
func TestHTTPBenchBreakdown(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs five sides: not with -short")
	}
	t.Parallel()
	db := pgtest.DB(t, 4)
	rep, err := httpbench.Run(context.Background(), httpbench.Options{DatabaseURL: db.URL, Clients: 8, Duration: time.Second,
		Warmup: 200 * time.Millisecond, Breakdown: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	for _, s := range []httpbench.Side{rep.Library, rep.Service, rep.Ceiling, *rep.LibraryWorkers, *rep.ServiceQuiet} {
		service := s.Name == rep.Service.Name || s.Name == rep.ServiceQuiet.Name
		switch {
		case s.Ops == 0:
			t.Errorf("%s served nothing: %v", s.Name, s.Statuses)
		case s.SelfCPUus <= 0:
			t.Errorf("%s: no CPU of this process per answer", s.Name)
		case service && s.ServeCPUus <= 0:
			t.Errorf("%s: no CPU of serve per answer", s.Name)
		case s.Name != rep.Ceiling.Name && s.DBCPUus <= 0:
			t.Errorf("%s: no CPU of the database per answer", s.Name)
		}
	}
}
