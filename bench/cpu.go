package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// CPU accounting: this process, the run database's backends and the
// machine, from /proc, and the load average.

// loadAvg returns the 1, 5 and 15 minute load averages, or "" when unknown.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// cpuSample is this process's CPU time, the run database's backends' CPU
// time and the machine's CPU counters.
type cpuSample struct {
	at        time.Time
	self      time.Duration
	pg        map[int]uint64 // backend pid -> utime+stime ticks; nil when unreadable
	busy, all uint64         // jiffies from /proc/stat; zero when unreadable
}

// clockTicks is Linux's USER_HZ, the unit of /proc CPU times.
const clockTicks = 100

// readCPU samples CPU counters; conn (may be nil) lists db's backends, whose
// CPU time is read from /proc when the server runs on this machine.
func readCPU(ctx context.Context, conn *pgx.Conn, db string) cpuSample {
	s := cpuSample{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if conn != nil {
		rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", db)
		if err == nil {
			pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err == nil {
				s.pg = map[int]uint64{}
				for _, pid := range pids {
					if t, ok := procTicks(int(pid)); ok {
						s.pg[int(pid)] = t
					}
				}
			}
		}
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	for i, v := range f[1:9] {
		n, _ := strconv.ParseUint(v, 10, 64)
		s.all += n
		if i != 3 && i != 4 { // idle, iowait
			s.busy += n
		}
	}
	return s
}

// procTicks returns a process's user+system CPU ticks from /proc/pid/stat.
func procTicks(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces; fields resume after ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	return u + st, err1 == nil && err2 == nil
}

// backendCPU is the CPU time the run database's backends used between a
// and b (zero when unreadable).
func backendCPU(a, b cpuSample) time.Duration {
	var ticks uint64
	for pid, t := range b.pg {
		if t0, ok := a.pg[pid]; ok && t >= t0 {
			ticks += t - t0
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// cpuShare returns the percent of the machine's CPU used between a and b by
// this process, by the run database's backends (0 when unreadable, e.g. a
// remote server) and by everything else.
func cpuShare(a, b cpuSample) (goPct, pgPct, otherPct float64) {
	wall := b.at.Sub(a.at)
	if wall <= 0 {
		return 0, 0, 0
	}
	capacity := float64(wall) * float64(runtime.NumCPU())
	goPct = 100 * float64(b.self-a.self) / capacity
	var ticks uint64
	for pid, t := range b.pg {
		if t0, ok := a.pg[pid]; ok && t >= t0 {
			ticks += t - t0
		}
	}
	pgPct = 100 * float64(time.Duration(ticks)*time.Second/clockTicks) / capacity
	if b.all > a.all {
		busy := 100 * float64(b.busy-a.busy) / float64(b.all-a.all)
		otherPct = max(0, busy-goPct-pgPct)
	}
	r := func(v float64) float64 { return math.Round(v*10) / 10 }
	return r(goPct), r(pgPct), r(otherPct)
}
