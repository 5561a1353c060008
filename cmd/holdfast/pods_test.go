package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/holdfast/holdfast/postgres/pgcluster"
)

// TestServePods runs `holdfast serve --pods-config` over two pods on two
// private servers (the control database beside pod a): shops are placed on
// both, a reservation lands in its pod's database only, `pods list` and
// `pods status` read the map and the pods, and when pod b's server stops
// its shop is answered 503 unavailable with Retry-After while shop 1 on
// pod a still reserves.
func TestServePods(t *testing.T) {
	ctx := context.Background()
	start := func() *pgcluster.Cluster {
		c, err := pgcluster.Start(ctx, pgcluster.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
		return c
	}
	c1, c2 := start(), start()
	for _, d := range []struct {
		c    *pgcluster.Cluster
		name string
	}{{c1, "control"}, {c1, "pa"}, {c2, "pb"}} {
		conn, err := pgx.Connect(ctx, d.c.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+d.name)
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TEST_POD_B_URL", c2.URL("pb"))
	cfg := fmt.Sprintf(`{"control": {"url": %q}, "cache_ttl": "1s",
	  "pods": [{"name": "a", "url": %q, "max_conns": 6}, {"name": "b", "url_env": "TEST_POD_B_URL", "max_conns": 6}]}`,
		c1.URL("control"), c1.URL("pa"))
	path := filepath.Join(t.TempDir(), "pods.json")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// Bad files are usage errors naming the field.
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte(`{"control": {"url": "x"}, "pods": [{"name": "a b", "url": "y"}]}`), 0o600)
	if code, out, errOut := run(t, "pods", "list", "--pods-config", bad); code != 2 || !strings.Contains(out+errOut, "pods[0].name") {
		t.Errorf("pods list on a bad file: exit %d %s%s", code, out, errOut)
	}

	base := startServe(t, "--pods-config", path)
	t.Setenv("DATABASE_URL", c1.URL("control"))
	key := func(shop string) string {
		code, out, errOut := run(t, "keys", "create", "--shop", shop)
		if code != 0 {
			t.Fatalf("keys create: %d %s%s", code, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return strings.TrimSpace(lines[len(lines)-1])
	}
	k1, k2 := key("1"), key("2")
	// In order: a new shop goes to the pod with fewest shops, ties by name,
	// so shop 1 lands on a and shop 2 on b.
	for _, sk := range [][2]string{{"1", k1}, {"2", k2}} {
		shop, k := sk[0], sk[1]
		if code, body := call(t, "PUT", base+"/v1/shops/"+shop+"/inventory/42/1", k, `{"available": 10, "reason": "stocktake"}`); code != http.StatusOK {
			t.Fatalf("stock shop %s: %d %s", shop, code, body)
		}
	}
	reserve := func(shop, k, id string) (int, http.Header, []byte) {
		req, _ := http.NewRequest("POST", base+"/v1/shops/"+shop+"/reservations",
			strings.NewReader(`{"checkout_id":"`+id+`","lines":[{"item_id":42,"location_id":1,"quantity":1}]}`))
		req.Header.Set("Authorization", "Bearer "+k)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, res.Header, b
	}
	const co = "6f1c2b9e-1d2a-4c53-9a51-3f5f1b0c7e42"
	if code, _, body := reserve("2", k2, co); code != http.StatusCreated {
		t.Fatalf("reserve shop 2: %d %s", code, body)
	}
	// The hold is in pod b's database, not pod a's.
	countHolds := func(u string) int {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM holds WHERE checkout_id = $1", co).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if a, b := countHolds(c1.URL("pa")), countHolds(c2.URL("pb")); a != 0 || b != 1 {
		t.Fatalf("holds of the checkout: pod a %d, pod b %d; want 0 and 1", a, b)
	}
	code, out, errOut := run(t, "pods", "list", "--pods-config", path, "--json")
	var infos []struct {
		Name  string `json:"name"`
		Shops int    `json:"shops"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &infos) != nil || len(infos) != 2 || infos[0].Shops != 1 || infos[1].Shops != 1 {
		t.Fatalf("pods list: exit %d %s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "pods", "list", "--pods-config", path, "--shops"); code != 0 || !regexp.MustCompile(`(?m)^1\s+a\s+1\s`).MatchString(out) || !regexp.MustCompile(`(?m)^2\s+b\s+1\s`).MatchString(out) {
		t.Fatalf("pods list --shops: exit %d %s%s", code, out, errOut)
	}
	if code, out, errOut := run(t, "pods", "status", "--pods-config", path); code != 0 || strings.Count(out, " up ") != 3 {
		t.Fatalf("pods status: exit %d\n%s%s", code, out, errOut)
	}

	// Pod a stops taking new shops: shop 3 goes to b although b has more.
	if code, out, errOut := run(t, "pods", "new-shops", "--pods-config", path, "--pod", "a", "--off"); code != 0 || !strings.Contains(out, "refused") {
		t.Fatalf("pods new-shops --off: exit %d %s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "pods", "new-shops", "--pods-config", path, "--pod", "zz"); code != 2 || !strings.Contains(errOut, "no such pod") {
		t.Fatalf("pods new-shops on an unknown pod: exit %d %s", code, errOut)
	}
	if code, body := call(t, "PUT", base+"/v1/shops/3/inventory/42/1", key("3"), `{"available": 1, "reason": "stocktake"}`); code != http.StatusOK {
		t.Fatalf("stock shop 3: %d %s", code, body)
	}
	if code, out, _ := run(t, "pods", "list", "--pods-config", path, "--shops"); code != 0 || !regexp.MustCompile(`(?m)^3\s+b\s`).MatchString(out) {
		t.Fatalf("shop 3 with pod a refusing new shops:\n%s", out)
	}

	// The doctor runs on each pod, findings named by pod.
	if _, out, errOut := run(t, "pods", "doctor", "--pods-config", path); !strings.Contains(out, "a: invariant") || !strings.Contains(out, "b: invariant") {
		t.Fatalf("pods doctor lacks a pod's invariant check:\n%s%s", out, errOut)
	}

	// Pod b's server stops: shop 2 is 503 with Retry-After, shop 1 trades.
	if err := c2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		code, h, body := reserve("2", k2, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		if code == http.StatusServiceUnavailable && h.Get("Retry-After") != "" && strings.Contains(string(body), `"unavailable"`) {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("reserve on stopped pod b: %d %v %s; want 503 unavailable with Retry-After", code, h, body)
		}
	}
	if code, _, body := reserve("1", k1, "00000000-0000-4000-8000-ffffffffffff"); code != http.StatusCreated {
		t.Fatalf("reserve shop 1 on pod a while b is down: %d %s", code, body)
	}
	if code, out, _ := run(t, "pods", "status", "--pods-config", path); code != 2 || !strings.Contains(out, "DOWN") {
		t.Fatalf("pods status with pod b down: exit %d\n%s", code, out)
	}
	if code, out, _ := run(t, "pods", "doctor", "--pods-config", path); code != 2 || !regexp.MustCompile(`CRITICAL\s+b: reachable`).MatchString(out) || !strings.Contains(out, "a: invariant") {
		t.Fatalf("pods doctor with pod b down: exit %d\n%s", code, out)
	}
}
