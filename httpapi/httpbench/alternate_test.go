package httpbench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/holdfast/holdfast"
	"github.com/holdfast/holdfast/postgres"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestServeBuildsAlternating compares `holdfast serve` builds on the
// service side alone, in short windows taken in turn, so that each pair
// shares the machine's load (on a shared machine a whole `bench --http`
// of one build and then of another do not): HOLDFAST_HTTPBENCH_ALTERNATE
// names the binaries, comma-separated; HOLDFAST_HTTPBENCH_ROUNDS the
// rounds (default 4). Each window is 1 s of warm-up and 5 s measured at
// 64 clients against a fresh serve on one private database, its events
// sequenced before the next serve starts. Besides the CPU per answer it
// prints serve's and this process's read and write system calls and
// context switches per answer (/proc/<pid>/io and each thread's status):
// counts that, unlike CPU time, hardly move with the machine's load.
// Skipped without HOLDFAST_HTTPBENCH_ALTERNATE; nothing is asserted.
func TestServeBuildsAlternating(t *testing.T) {
	bins := strings.Split(os.Getenv("HOLDFAST_HTTPBENCH_ALTERNATE"), ",")
	if len(bins) < 2 {
		t.Skip("set HOLDFAST_HTTPBENCH_ALTERNATE=/path/to/holdfast-a,/path/to/holdfast-b to compare serve builds")
	}
	rounds, _ := strconv.Atoi(os.Getenv("HOLDFAST_HTTPBENCH_ROUNDS"))
	if rounds <= 0 {
		rounds = 4
	}
	db := pgtest.DB(t, 24)
	ctx := context.Background()
	hc, err := postgres.New(db.Pool, holdfast.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for range rounds {
		for _, bin := range bins {
			if err := drainEvents(ctx, hc); err != nil {
				t.Fatal(err)
			}
			srv, client, key, err := startService(ctx, Options{DatabaseURL: db.URL, Binary: bin}.withDefaults())
			if err != nil {
				t.Fatal(err)
			}
			pid := srv.cmd.Process.Pid
			cpu := &cpuSampler{pool: db.Pool, servePID: pid}
			l := startLoad(ctx, 64, reserver(client, srv.url, key, 2))
			wait(ctx, time.Second)
			l.collect("warmup")
			a, sa, ma := cpu.sample(ctx), procCounts(pid), procCounts(os.Getpid())
			wait(ctx, 5*time.Second)
			s := l.collect(bin)
			s.perOp(a, cpu.sample(ctx))
			sb, mb := procCounts(pid), procCounts(os.Getpid())
			l.stop()
			srv.stop()
			la, _ := os.ReadFile("/proc/loadavg")
			n := float64(max(s.Ops, 1))
			fmt.Printf("%s %s: %.0f holds/s %v, CPU µs per answer bench %.1f serve %.1f database %.1f total %.1f; per answer serve read %.2f write %.2f ctxsw %.2f, bench read %.2f write %.2f ctxsw %.2f; load %s",
				time.Now().UTC().Format("15:04:05"), bin, s.PerSec, s.Statuses, s.SelfCPUus, s.ServeCPUus, s.DBCPUus, s.SelfCPUus+s.ServeCPUus+s.DBCPUus,
				(sb[0]-sa[0])/n, (sb[1]-sa[1])/n, (sb[2]-sa[2])/n, (mb[0]-ma[0])/n, (mb[1]-ma[1])/n, (mb[2]-ma[2])/n, la)
		}
	}
}

// procCounts is a process's read and write system calls (/proc/<pid>/io
// syscr, syscw) and its threads' context switches, voluntary and not.
func procCounts(pid int) [3]float64 {
	var c [3]float64
	field := func(file, name string) float64 {
		b, _ := os.ReadFile(file)
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == name {
				v, _ := strconv.ParseFloat(f[1], 64)
				return v
			}
		}
		return 0
	}
	dir := "/proc/" + strconv.Itoa(pid)
	c[0], c[1] = field(dir+"/io", "syscr:"), field(dir+"/io", "syscw:")
	tasks, _ := os.ReadDir(dir + "/task")
	for _, task := range tasks {
		st := dir + "/task/" + task.Name() + "/status"
		c[2] += field(st, "voluntary_ctxt_switches:") + field(st, "nonvoluntary_ctxt_switches:")
	}
	return c
}
