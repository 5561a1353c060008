// Package rediscluster starts a private, throwaway redis-server from the
// locally installed binary (Debian package redis-server): the legacy hold
// store that the shadow layer's tests, `holdfast demo --scenario migration`
// and the bench's Redis row run against when REDIS_URL is unset. It never
// touches a system Redis on the standard port.
//
// The server runs with --save "" --appendonly no, as the legacy ran
// for holds: fast, and nothing survives a restart.
package rediscluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoServer is returned when no redis-server binary can be found.
var ErrNoServer = errors.New("rediscluster: no redis-server binary found (looked on PATH and in /usr/bin); install it, e.g. `apt-get install redis-server` on Debian (its service need not be enabled), or set REDIS_URL")

// StartTimeoutDefault bounds how long Start waits for the server to answer.
const StartTimeoutDefault = 30 * time.Second

// Server is a running private redis-server. Stop is idempotent and safe for
// concurrent use.
type Server struct {
	port     int
	dir      string
	cmd      *exec.Cmd
	done     chan struct{}
	stopOnce sync.Once
	stopErr  error
}

// Start starts a redis-server on a free loopback port in a new temporary
// directory, and waits (bounded by ctx and StartTimeoutDefault) until it
// answers PING.
func Start(ctx context.Context) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if _, statErr := os.Stat("/usr/bin/redis-server"); statErr != nil {
			return nil, ErrNoServer
		}
		bin = "/usr/bin/redis-server"
	}
	dir, err := os.MkdirTemp("", "holdfast-redis-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeoutDefault)
	defer cancel()
	// A port taken between choosing and binding makes the server exit: try
	// a few ports.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{port: port, dir: dir, done: make(chan struct{})}
		s.cmd = exec.Command(bin,
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no",
			"--logfile", filepath.Join(dir, "redis.log"))
		// The server gets SIGTERM when the thread that started it exits:
		// that thread stays locked to the goroutine waiting on the server,
		// so a process that exits without Stop (os.Exit in TestMain) takes
		// its server with it. The goroutine unlocks the thread before it
		// returns: a goroutine that returns while locked makes the Go
		// runtime terminate its thread, and every child forked earlier on
		// that thread with a Pdeathsig (a test's private PostgreSQL or
		// MariaDB) would get its death signal — which is how the httpapi
		// tests' cluster died mid-run after a shadow test stopped its Redis.
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		started := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := s.cmd.Start(); err != nil {
				started <- err
				close(s.done)
				return
			}
			started <- nil
			_ = s.cmd.Wait()
			close(s.done)
		}()
		if err := <-started; err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("rediscluster: start %s: %w", bin, err)
		}
		if lastErr = s.waitReady(ctx); lastErr == nil {
			return s, nil
		}
		s.kill()
		if ctx.Err() != nil {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("rediscluster: server did not start: %w (log: %s)", lastErr, filepath.Join(dir, "redis.log"))
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// Addr is the server's host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// Stop stops the server (by its own process, never by name) and removes its
// directory.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.kill()
		s.stopErr = os.RemoveAll(s.dir)
	})
	return s.stopErr
}

func (s *Server) kill() {
	if s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// waitReady polls PING over a raw connection until the server answers.
func (s *Server) waitReady(ctx context.Context) error {
	for {
		select {
		case <-s.done:
			return errors.New("redis-server exited")
		default:
		}
		if err := ping(ctx, s.Addr()); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return errors.New("redis-server exited")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("unexpected answer %q", line)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// URLOrStart returns REDIS_URL when it is set (and a nil server), else starts
// a private server and returns its URL. The caller stops a non-nil server.
func URLOrStart(ctx context.Context) (string, *Server, error) {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u, nil, nil
	}
	s, err := Start(ctx)
	if err != nil {
		return "", nil, err
	}
	return s.URL(), s, nil
}
