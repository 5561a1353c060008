package hotbench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is Linux's USER_HZ, the unit of /proc's CPU times.
const clockTicks = 100

// procStat is what ServerCPU reads of /proc/<pid>/stat.
type procStat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime uint64 // clock ticks
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields resume after the last ')'.
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("hotbench: /proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[closing+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("hotbench: /proc/%d/stat: %d fields", pid, len(f))
	}
	st := procStat{comm: s[open+1 : closing]}
	n := func(i int) uint64 {
		v, e := strconv.ParseUint(f[i], 10, 64)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	st.ppid = int(n(1))
	st.utime, st.stime, st.cutime, st.cstime = n(11), n(12), n(13), n(14)
	return st, err
}

// ServerCPU returns the user+system CPU time of the local process pid and,
// with children, of every live child of it plus the children it has
// already reaped (PostgreSQL's postmaster reaps every backend that exits).
// The process's command name must contain one of names (a guard against a
// stale pid file naming another process). It fails when the process
// cannot be read: a server on another machine.
func ServerCPU(pid int, names []string, children bool) (time.Duration, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, err
	}
	if !containsAny(st.comm, names) {
		return 0, fmt.Errorf("hotbench: process %d is %q, not the server", pid, st.comm)
	}
	ticks := st.utime + st.stime
	if children {
		ticks += st.cutime + st.cstime
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return 0, err
		}
		for _, e := range ents {
			child, err := strconv.Atoi(e.Name())
			if err != nil || child == pid {
				continue
			}
			if cs, err := readProcStat(child); err == nil && cs.ppid == pid {
				ticks += cs.utime + cs.stime + cs.cutime + cs.cstime
			}
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// PIDFile reads the process ID on the first line of a server's pid file
// (PostgreSQL's postmaster.pid, MariaDB's pid_file).
func PIDFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}
