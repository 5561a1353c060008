package httpbench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// CPU per answer: what each process of a side spent, from /proc and
// getrusage, over the side's measured window. Unlike holds/s these do not
// swing with what else the machine runs, so they say where the service's
// time goes beside the library's (issue #29 item 5).

// cpuClockTicks is Linux's USER_HZ, the unit of /proc CPU times.
const cpuClockTicks = 100

// cpuPoint is one sample: this process, serve (0 when not running), and
// the database's backends by pid (nil when unreadable: a remote server).
type cpuPoint struct {
	self, serve time.Duration
	pg          map[int]time.Duration
}

// cpuSampler samples the processes of a run.
type cpuSampler struct {
	pool     *pgxpool.Pool
	servePID int
}

func (c *cpuSampler) sample(ctx context.Context) cpuPoint {
	var p cpuPoint
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		p.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if c.servePID > 0 {
		p.serve, _ = procCPU(c.servePID)
	}
	if c.pool == nil {
		return p
	}
	rows, err := c.pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	if err != nil {
		return p
	}
	defer rows.Close()
	p.pg = map[int]time.Duration{}
	for rows.Next() {
		var pid int32
		if rows.Scan(&pid) != nil {
			return cpuPoint{self: p.self, serve: p.serve}
		}
		t, ok := procCPU(int(pid))
		if !ok {
			return cpuPoint{self: p.self, serve: p.serve} // not this machine's
		}
		p.pg[int(pid)] = t
	}
	return p
}

// procCPU is a process's user+system CPU time from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name may hold spaces: fields count from its ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b)[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	s, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / cpuClockTicks, true
}

// perOp sets s's CPU per answer from the samples around its window.
// Backends that came or went in between count from zero or are left out:
// pools keep their connections through a run.
func (s *Side) perOp(a, b cpuPoint) {
	n := s.Ops
	for _, st := range []string{"503", "error"} {
		n += s.Statuses[st]
	}
	if n <= 0 {
		return
	}
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	s.SelfCPUus = us(b.self - a.self)
	if b.serve > 0 {
		s.ServeCPUus = us(b.serve - a.serve)
	}
	if a.pg != nil && b.pg != nil {
		var d time.Duration
		for pid, t := range b.pg {
			d += t - a.pg[pid]
		}
		s.DBCPUus = us(d)
	}
}
