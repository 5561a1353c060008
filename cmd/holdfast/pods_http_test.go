package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/client"
	"github.com/holdfast/holdfast/postgres/pgcluster"
	"github.com/holdfast/holdfast/wire"
)

// TestPodsMoveHTTP: `holdfast serve --pods-config` over two PostgreSQL
// pods moves a shop over HTTP (POST /v1/admin/pods/moves answers 202, the
// move is read until done), its placement switches, its holds follow and
// the move is counted on /metrics. Bad input — an unknown pod, an unknown
// shop, the shop's own pod, a bad method, a shop key — is a 4xx with its
// code and field and changes nothing. A move held before its fence is
// aborted over HTTP: cancelled, undone, the shop served by its source.
// Two moves held at once fill the server's bound (a third is 409
// moves_full); a graceful shutdown cancels them, undone, and exits 0.
func TestPodsMoveHTTP(t *testing.T) {
	ctx := context.Background()
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	for _, name := range []string{"control", "pa", "pb"} {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`{"control": {"url": %q}, "default_pod": "a",
	  "pods": [{"name": "a", "url": %q, "max_conns": 6}, {"name": "b", "url": %q, "max_conns": 6}]}`,
		c.URL("control"), c.URL("pa"), c.URL("pb"))
	path := filepath.Join(t.TempDir(), "pods.json")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// Shops 2 and 3's moves wait before their fence until cancelled: the
	// moves the abort and the shutdown below cancel.
	held, released := make(chan struct{}, 2), make(chan struct{}, 3)
	podsMoveBeforeFence = func(ctx context.Context, shop int64) error {
		if shop == 1 {
			return nil
		}
		held <- struct{}{}
		<-ctx.Done()
		released <- struct{}{}
		return ctx.Err()
	}
	t.Cleanup(func() { podsMoveBeforeFence = nil })
	base, stop := startServeStop(t, "--pods-config", path)
	t.Setenv("DATABASE_URL", c.URL("control"))
	newKey := func(args ...string) string {
		code, out, errOut := run(t, append([]string{"keys", "create"}, args...)...)
		if code != 0 {
			t.Fatalf("keys create %v: %d %s%s", args, code, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return strings.TrimSpace(lines[len(lines)-1])
	}
	admin := newKey("--admin")
	adm := client.New(base, admin)
	// Shops 1 and 2 trade on pod a (the default pod).
	for _, shop := range []string{"1", "2", "3"} {
		if code, body := call(t, "PUT", base+"/v1/shops/"+shop+"/inventory/42/1", admin, `{"available": 10, "reason": "stocktake"}`); code != http.StatusOK {
			t.Fatalf("stock of shop %s: %d %s", shop, code, body)
		}
	}
	reserve := func(shop, id string) {
		t.Helper()
		if code, body := call(t, "POST", base+"/v1/shops/"+shop+"/reservations", admin, `{"checkout_id":"`+id+`","lines":[{"item_id":42,"location_id":1,"quantity":1}]}`); code != http.StatusCreated {
			t.Fatalf("reserve %s in shop %s: %d %s", id, shop, code, body)
		}
	}
	reserve("1", "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42")
	reserve("2", "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e43")
	reserve("3", "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e46")
	rows := func(db string, shop int) int64 {
		return countRows(t, c.URL(db), fmt.Sprintf("SELECT count(*) FROM holds WHERE shop_id = %d", shop))
	}
	placement := func(shop int64) *wire.Placement {
		t.Helper()
		pl, err := adm.Placement(ctx, shop)
		if err != nil {
			t.Fatalf("placement of shop %d: %v", shop, err)
		}
		return pl
	}
	if pl := placement(1); pl.Pod != "a" || pl.Epoch != 1 {
		t.Fatalf("shop 1 before the move: %+v", pl)
	}
	pl, err := adm.Pods(ctx)
	if err != nil || len(pl) != 2 || pl[0].Name != "a" || pl[0].Shops != 3 || !pl[0].Up || !pl[0].Configured || pl[1].Shops != 0 {
		t.Fatalf("pods: %+v, %v", pl, err)
	}

	// Bad input: a 4xx with code and field, nothing started, nothing moved.
	for _, b := range []struct{ key, body, code, field string }{
		{admin, `{"shop": 1, "to": "zz"}`, "invalid_argument", "to"},
		{admin, `{"shop": 99, "to": "b"}`, "not_found", "shop"},
		{admin, `{"shop": 1, "to": "a"}`, "move_refused", "to"},
		{admin, `{"shop": 1, "to": "b", "method": "teleport"}`, "invalid_argument", "method"},
		{admin, `{"shop": 1}`, "missing_field", "to"},
		{newKey("--shop", "1"), `{"shop": 1, "to": "b"}`, "forbidden", ""},
	} {
		code, body := call(t, "POST", base+"/v1/admin/pods/moves", b.key, b.body)
		var e wire.ErrorBody
		if err := json.Unmarshal(body, &e); err != nil || code < 400 || code >= 500 || e.Error.Code != b.code || e.Error.Field != b.field {
			t.Errorf("POST moves %s: %d %s; want code %s field %q", b.body, code, body, b.code, b.field)
		}
	}
	if ms, err := adm.Moves(ctx); err != nil || len(ms) != 0 {
		t.Fatalf("moves after bad input: %+v, %v", ms, err)
	}
	if pl := placement(1); pl.Pod != "a" || pl.Epoch != 1 || rows("pa", 1) != 1 || rows("pb", 1) != 0 {
		t.Fatalf("shop 1 after bad input: %+v, holds a %d b %d", pl, rows("pa", 1), rows("pb", 1))
	}

	// The move: 202, read until done.
	movedBefore := metric(t, base, admin, `holdfast_pods_moves_finished_total{result="moved"}`)
	m, err := adm.StartMove(ctx, 1, "b", "")
	if err != nil || m.State != "running" || m.From != "a" || m.To != "b" || m.Method != "auto" {
		t.Fatalf("start the move: %+v, %v", m, err)
	}
	m = waitMove(t, adm, m.ID)
	if m.State != "done" || m.Report == nil || m.Report.Epoch != 2 || m.Report.Method != "copy" || m.Report.Rows == 0 || m.Error != nil || m.EndedAt == nil {
		t.Fatalf("the move: %+v (report %+v, error %+v)", m, m.Report, m.Error)
	}
	t.Logf("moved shop 1 over HTTP: %d rows, fence %.1f ms", m.Report.Rows, m.Report.FenceMS)
	for _, u := range []string{"/v1/admin/pods", "/v1/admin/pods/shops/1", fmt.Sprintf("/v1/admin/pods/moves/%d", m.ID)} {
		_, body := call(t, "GET", base+u, admin, "")
		t.Logf("GET %s: %s", u, body) // docs/API.md's example answers
	}
	if pl := placement(1); pl.Pod != "b" || pl.Epoch != 2 || pl.MoveID != 0 {
		t.Fatalf("shop 1 after the move: %+v", pl)
	}
	if a, b := rows("pa", 1), rows("pb", 1); a != 0 || b != 1 {
		t.Fatalf("shop 1's holds after the move: a %d, b %d; want 0 and 1", a, b)
	}
	reserve("1", "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e44")
	if b := rows("pb", 1); b != 2 {
		t.Fatalf("a reservation after the move: %d holds of shop 1 on b, want 2", b)
	}
	if got := metric(t, base, admin, `holdfast_pods_moves_finished_total{result="moved"}`); got != movedBefore+1 {
		t.Fatalf("holdfast_pods_moves_finished_total{result=\"moved\"}: %v after the move, %v before", got, movedBefore)
	}
	if metric(t, base, admin, "holdfast_pods_move_fence_seconds_count") < 1 {
		t.Fatal("holdfast_pods_move_fence_seconds_count: no fence observed")
	}

	// Abort: shop 2's move waits before its fence; a second move of the
	// shop is refused; the abort cancels and undoes it.
	m2, err := adm.StartMove(ctx, 2, "b", "copy")
	if err != nil {
		t.Fatal(err)
	}
	<-held
	if m, _ := adm.Move(ctx, m2.ID); m.State != "running" || m.Step != "fencing" {
		t.Fatalf("the held move: %+v", m)
	}
	if pl := placement(2); pl.MoveID != m2.ID {
		t.Fatalf("shop 2's placement names move %d, want %d", pl.MoveID, m2.ID)
	}
	if _, err := adm.StartMove(ctx, 2, "b", ""); !isAPIError(err, "move_running", "shop") {
		t.Fatalf("a second move of shop 2: %v", err)
	}
	if metric(t, base, admin, "holdfast_pods_moves_in_progress") != 1 {
		t.Fatal("holdfast_pods_moves_in_progress is not 1 while a move runs")
	}
	// The abort through raw HTTP (its answer logged for docs/API.md); a
	// second abort, through the client, finds nothing to cancel.
	code, body := call(t, "POST", base+"/v1/admin/pods/shops/2/abort", admin, "")
	t.Logf("POST /v1/admin/pods/shops/2/abort: %d %s", code, body)
	var ab *wire.MoveAbort
	if err := json.Unmarshal(body, &ab); err != nil || code != http.StatusOK {
		t.Fatalf("abort: %d %s", code, body)
	}
	if ab.Pod != "a" || ab.Cancelled == nil || ab.Cancelled.ID != m2.ID || ab.Cancelled.State != "failed" ||
		!ab.Cancelled.Aborted || ab.Cancelled.Error == nil || ab.Cancelled.Error.Code != "move_cancelled" {
		t.Fatalf("abort: %+v (cancelled %+v)", ab, ab.Cancelled)
	}
	if again, err := adm.AbortMove(ctx, 2); err != nil || again.Cancelled != nil || again.Pod != "a" {
		t.Fatalf("abort again: %+v, %v", again, err)
	}
	if m, _ := adm.Move(ctx, m2.ID); m.State != "failed" || m.Error == nil || m.Error.Code != "move_cancelled" {
		t.Fatalf("the aborted move: %+v", m)
	}
	if pl := placement(2); pl.Pod != "a" || pl.Epoch != 1 || pl.MoveID != 0 {
		t.Fatalf("shop 2 after the abort: %+v", pl)
	}
	reserve("2", "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e45")
	if a, b := rows("pa", 2), rows("pb", 2); a != 2 || b != 0 {
		t.Fatalf("shop 2's holds after the abort: a %d, b %d; want 2 and 0", a, b)
	}
	if ms, err := adm.Moves(ctx); err != nil || len(ms) != 2 || ms[0].ID != m2.ID {
		t.Fatalf("moves: %+v, %v", ms, err)
	}
	if _, err := adm.Move(ctx, 99); !isAPIError(err, "not_found", "move_id") {
		t.Fatalf("an unknown move: %v", err)
	}

	// Two moves held: the server's bound; then a graceful shutdown.
	for _, shop := range []int64{2, 3} {
		if _, err := adm.StartMove(ctx, shop, "b", ""); err != nil {
			t.Fatalf("move of shop %d: %v", shop, err)
		}
		<-held
	}
	if _, err := adm.StartMove(ctx, 1, "a", ""); !isAPIError(err, "moves_full", "") {
		t.Fatalf("a third move at once: %v", err)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d with moves running", code)
	}
	// Both held moves were cancelled before serve returned (the abort's
	// is the first of the three).
	if n := len(released); n != 3 {
		t.Fatalf("%d held moves cancelled by the abort and the shutdown, want 3", n)
	}
	code, out, errOut := run(t, "pods", "list", "--pods-config", path, "--shops", "--json")
	var places []struct {
		ShopID int64  `json:"shop_id"`
		Pod    string `json:"pod"`
		Epoch  int64  `json:"epoch"`
	}
	if err := json.Unmarshal([]byte(out), &places); code != 0 || err != nil || len(places) != 3 {
		t.Fatalf("pods list --shops: %d %s%s", code, out, errOut)
	}
	for _, p := range places[1:] {
		if p.Pod != "a" || p.Epoch != 1 {
			t.Fatalf("shop %d after the shutdown: on %s at epoch %d, want a at 1", p.ShopID, p.Pod, p.Epoch)
		}
	}
	for _, db := range []string{"pa", "pb"} {
		if n := countRows(t, c.URL(db), "SELECT count(*) FROM holdfast_shop_fences WHERE shop_id IN (2, 3)"); n != 0 {
			t.Fatalf("%d fence marks of shops 2 and 3 left on %s after the shutdown", n, db)
		}
	}
	if b := rows("pb", 2) + rows("pb", 3); b != 0 {
		t.Fatalf("%d holds of shops 2 and 3 on pod b after the shutdown", b)
	}
}

// startServeStop is startServe with stop, which shuts serve down
// gracefully (as SIGTERM does) and answers its exit code.
func startServeStop(t *testing.T, args ...string) (string, func() int) {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var outb, errb bytes.Buffer
	go func() {
		done <- execute(ctx, append([]string{"serve", "--addr", addr, "--log-format", "text"}, args...), &outb, &errb)
	}()
	code, stopped := 0, false
	stop := func() int {
		if !stopped {
			stopped = true
			cancel()
			code = <-done
		}
		return code
	}
	t.Cleanup(func() { stop() })
	base := "http://" + addr
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base, stop
			}
		}
		select {
		case code := <-done:
			stopped = true
			t.Fatalf("serve %q exited %d before it was ready\n%s%s", args, code, &outb, &errb)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve %q was not ready within 2 minutes", args)
		}
	}
}

// waitMove reads move id until it is no longer running.
func waitMove(t *testing.T, c *client.Client, id int64) *wire.Move {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m, err := c.Move(context.Background(), id)
		if err != nil {
			t.Fatalf("move %d: %v", id, err)
		}
		if m.State != "running" {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("move %d still running: %+v", id, m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isAPIError(err error, code, field string) bool {
	var ce *client.Error
	return errors.As(err, &ce) && ce.Code == code && ce.Field == field
}

// metric reads one sample of the server's /metrics (0 when absent).
func metric(t *testing.T, base, key, series string) float64 {
	t.Helper()
	code, body := call(t, "GET", base+"/metrics", key, "")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
