package servetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/httpapi"
	"github.com/holdfast/holdfast/mysql/mysqltest"
	"github.com/holdfast/holdfast/postgres/pgstore"
	"github.com/holdfast/holdfast/postgres/pgtest"
)

// TestMain starts PostgreSQL and a private MariaDB (TestServeMySQLURL).
func TestMain(m *testing.M) { os.Exit(pgtest.Run(mysqltest.Runner(m))) }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/holdfast once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "holdfast-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "holdfast")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/holdfast/holdfast/cmd/holdfast").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func run(t *testing.T, dbURL string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// server is a running `holdfast serve`.
type server struct {
	cmd        *exec.Cmd
	url        string
	metricsURL string // with --metrics-addr
	stderr     *lockedBuffer
	done       chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// serve starts the binary on a free port and waits for its listening line.
func serve(t *testing.T, dbURL string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve", "--addr", "127.0.0.1:0", "--sweep-interval", "1s"}, args...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL)
	// Its own working directory: serve keeps webhook.key in its data
	// directory, .holdfast relative to it unless --data-dir says.
	cmd.Dir = t.TempDir()
	pr, pw := io.Pipe()
	s := &server{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = io.MultiWriter(s.stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line.Msg {
			case "metrics listening":
				s.metricsURL = "http://" + line.Addr
			case "holdfast serve listening":
				addr <- line.Addr
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case a := <-addr:
		s.url = "http://" + a
	case err := <-s.done:
		t.Fatalf("serve exited: %v\n%s", err, s.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not start:\n%s", s.stderr.String())
	}
	return s
}

// stop sends SIGTERM and returns the exit error.
func (s *server) stop(t *testing.T) error {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop on SIGTERM:\n%s", s.stderr.String())
		return nil
	}
}

func call(t *testing.T, method, u, key, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, u, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestServeAndKeys: keys created by the CLI reach the server, only their
// hash is stored, SIGTERM shuts down cleanly (exit 0), and keys never reach
// the log.
func TestServeAndKeys(t *testing.T) {
	t.Parallel()
	db := pgtest.DB(t, 4)
	out, errOut, err := run(t, db.URL, "keys", "create", "--shop", "1")
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := lines[len(lines)-1]
	if !strings.HasPrefix(key, "hf_") || strings.ContainsAny(key, " \t") {
		t.Fatalf("last stdout line is not a key alone: %q", out)
	}
	hash := sha256.Sum256([]byte(key))
	var stored int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM api_keys WHERE key_hash = $1 AND shop_id = 1 AND NOT admin", hash[:]).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("stored hash: %d %v", stored, err)
	}
	var leaked int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM api_keys WHERE strpos(encode(key_hash, 'escape'), $1) > 0", key).Scan(&leaked); err != nil || leaked != 0 {
		t.Fatalf("key stored in clear: %d %v", leaked, err)
	}
	if _, _, err := run(t, db.URL, "keys", "create", "--shop", "1", "--admin"); exitCode(err) != 2 {
		t.Fatalf("keys create --shop --admin: %v, want exit 2", err)
	}

	s := serve(t, db.URL)
	if st, body := call(t, "PUT", s.url+"/v1/shops/1/inventory/7/1", key, `{"available":5,"reason":"stock"}`); st != 200 {
		t.Fatalf("set: %d %s", st, body)
	}
	if st, body := call(t, "POST", s.url+"/v1/shops/1/reservations", key,
		`{"checkout_id":"6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42","lines":[{"item_id":7,"location_id":1,"quantity":2}]}`); st != 201 {
		t.Fatalf("reserve: %d %s", st, body)
	}
	// /metrics on the API's listener: an admin key, not a shop key.
	if st, _ := call(t, "GET", s.url+"/metrics", "", ""); st != 401 {
		t.Fatalf("/metrics without a key: %d, want 401", st)
	}
	if st, _ := call(t, "GET", s.url+"/metrics", key, ""); st != 403 {
		t.Fatalf("/metrics with a shop key: %d, want 403", st)
	}
	admin, _, err := httpapi.CreateKey(context.Background(), pgstore.Service(db.Pool), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if st, body := call(t, "GET", s.url+"/metrics", admin, ""); st != 200 || !strings.Contains(body, `holdfast_http_requests_total{outcome="ok",route="reserve",status="201"} 1`) ||
		!strings.Contains(body, "go_goroutines") {
		t.Fatalf("metrics: %d", st)
	}

	if _, errOut, err := run(t, db.URL, "keys", "revoke", key); err != nil {
		t.Fatalf("revoke: %v %s", err, errOut)
	}
	out, _, err = run(t, db.URL, "keys", "list")
	if err != nil || !strings.Contains(out, "shop 1") || strings.Contains(out, key) {
		t.Fatalf("keys list: %v\n%s", err, out)
	}
	if _, _, err := run(t, db.URL, "keys", "revoke", key); exitCode(err) != 1 {
		t.Fatalf("second revoke: %v, want exit 1", err)
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("serve after SIGTERM: %v\n%s", err, s.stderr.String())
	}
	logs := s.stderr.String()
	if !strings.Contains(logs, `"msg":"shut down"`) || !strings.Contains(logs, `"route":"reserve","status":201`) {
		t.Fatalf("log:\n%s", logs)
	}
	if strings.Contains(logs, key) || strings.Contains(logs, key[3:]) {
		t.Fatal("the key appears in the log")
	}
}

// TestServeMigrate: --migrate=false refuses a database whose schema is
// behind, with a clear message; the default migrates it and serves.
func TestServeMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := fmt.Sprintf("empty_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), pgtest.ServerURL())
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(pgtest.ServerURL())
	if err != nil || u.Scheme == "" {
		t.Skip("needs a URL-form server address")
	}
	u.Path = "/" + name
	_, errOut, err := run(t, u.String(), "serve", "--addr", "127.0.0.1:0", "--migrate=false")
	if exitCode(err) != 1 || !strings.Contains(errOut, "schema is behind") || !strings.Contains(errOut, "--migrate=false") {
		t.Fatalf("serve --migrate=false on an empty database: %v\n%s", err, errOut)
	}
	s := serve(t, u.String(), "--metrics-addr", "127.0.0.1:0", "--log-format", "json")
	if st, body := call(t, "GET", s.url+"/readyz", "", ""); st != 200 {
		t.Fatalf("readyz after migrating: %d %s", st, body)
	}
	// --metrics-addr moves /metrics to its own listener.
	if st, _ := call(t, "GET", s.url+"/metrics", "", ""); st != 404 {
		t.Fatalf("/metrics on the API listener with --metrics-addr: %d", st)
	}
	if st, body := call(t, "GET", s.metricsURL+"/metrics", "", ""); st != 200 || !strings.Contains(body, `holdfast_http_requests_total{outcome="ok",route="readyz",status="200"} 1`) {
		t.Fatalf("/metrics on --metrics-addr: %d", st)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}
