package httpapi_test

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/holdfast/holdfast/httpapi"
)

// floodURLEnv, set, makes this test binary the flood's own process: it runs
// TestFloodProcess against that URL until its stdin closes.
const floodURLEnv = "HOLDFAST_FLOOD_URL"

// TestFloodProcess is the flood generator of TestBadKeyFloodSeparateProcess
// when run as its own process (skipped otherwise): HOLDFAST_FLOOD_CLIENTS
// concurrent clients (default 500), each sending bad keys in a loop — half
// malformed, half well-formed random keys that need a lookup. It prints
// "flood started" once every client has an answer, then, when stdin closes,
// "flood result" and the count of each status as JSON.
func TestFloodProcess(t *testing.T) {
	url := os.Getenv(floodURLEnv)
	if url == "" {
		t.Skip("the flood's own process only")
	}
	n, _ := strconv.Atoi(os.Getenv("HOLDFAST_FLOOD_CLIENTS"))
	if n <= 0 {
		n = 500
	}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	var stop atomic.Bool
	var mu sync.Mutex
	counts := map[string]int{}
	var first sync.WaitGroup
	first.Add(n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			once := sync.OnceFunc(first.Done)
			defer once()
			for !stop.Load() {
				key := "hf_not-a-key"
				if i%2 == 0 {
					var b [32]byte
					_, _ = rand.Read(b[:])
					key = "hf_" + base64.RawURLEncoding.EncodeToString(b[:])
				}
				hr, _ := http.NewRequest("GET", url+"/v1/shops/1/inventory/7/1", nil)
				hr.Header.Set("Authorization", "Bearer "+key)
				res, err := hc.Do(hr)
				st := "error"
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					st = strconv.Itoa(res.StatusCode)
				}
				mu.Lock()
				counts[st]++
				mu.Unlock()
				once()
			}
		}()
	}
	first.Wait()
	start := time.Now()
	fmt.Println("flood started")
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop.Store(true)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, c := range counts {
		total += c
	}
	counts["per_second"] = int(float64(total) / time.Since(start).Seconds())
	b, _ := json.Marshal(counts)
	fmt.Printf("flood result %s\n", b)
}

// TestBadKeyFloodSeparateProcess (#10 item 11): a shop's steady load alone,
// then while another process floods the server with 500 concurrent clients
// sending bad keys. The shop never sees anything but its reservations (no
// 503); every bad key is answered 401. The shop's latencies are printed,
// never asserted.
func TestBadKeyFloodSeparateProcess(t *testing.T) {
	if os.Getenv(floodURLEnv) != "" {
		t.Skip("the flood's own process")
	}
	// The default, and — for comparison — refusals answered at once.
	for _, delay := range []time.Duration{httpapi.RefusalDelayDefault, -1} {
		e := newEnv(t, envOpts{server: httpapi.Config{KeyCacheTTL: time.Minute, RefusalDelay: delay}})
		e.stock(1, 7, 1_000_000)
		// The shop's load for a while, so that the flood's clients (held
		// about a second per answer) come back several times within it.
		steady := func(d time.Duration) []time.Duration {
			var lat []time.Duration
			for end := time.Now().Add(d); time.Now().Before(end); {
				start := time.Now()
				r := e.do(req{method: "POST", path: res1, key: "shop1", body: reserveBody(uuid.New(), line(7, 1), "")})
				lat = append(lat, time.Since(start))
				if r.status != 201 {
					t.Errorf("shop 1: %d %s", r.status, r.body)
				}
			}
			return lat
		}
		steady(time.Second) // warm the key cache and the connections
		solo := steady(4 * time.Second)

		cmd := exec.Command(os.Args[0], "-test.run=^TestFloodProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), floodURLEnv+"="+e.url)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		for lines.Scan() && lines.Text() != "flood started" {
		}
		floodStart := time.Now()
		during := steady(4 * time.Second)
		floodFor := time.Since(floodStart)
		stdin.Close()
		var result map[string]int
		for lines.Scan() {
			if s, ok := strings.CutPrefix(lines.Text(), "flood result "); ok {
				if err := json.Unmarshal([]byte(s), &result); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("flood process: %v", err)
		}
		if result == nil || result["401"] == 0 {
			t.Fatalf("flood result %v", result)
		}
		// At most 250 of the flood's requests need a lookup at once, within
		// the lookups' queue (KeyLookupQueueMax): every bad key is told 401.
		for st, n := range result {
			if st != "401" && st != "per_second" {
				t.Errorf("the flood was answered %s %d times", st, n)
			}
		}
		name := "refusals held (default)"
		if delay < 0 {
			name = "refusals at once"
		}
		t.Logf("%s: shop 1 alone: %d requests, p50 %v p99 %v; during a 500-client bad-key flood from another process (%v): %d requests, p50 %v p99 %v; flood answers %v",
			name, len(solo), pct(solo, 50), pct(solo, 99), floodFor.Round(time.Millisecond), len(during), pct(during, 50), pct(during, 99), result)
	}
}

// TestRefusalHeld: the answer to a request with a bad or missing key is
// held (Config.RefusalDelay) — seen in the refusals-held gauge, not timed
// — and sent when the request's own deadline ends first; a shop's key is
// not held.
func TestRefusalHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{server: httpapi.Config{RefusalDelay: time.Hour}})
	held := func() int {
		r := e.do(req{method: "GET", path: "/metrics", key: "admin"})
		for _, l := range strings.Split(string(r.body), "\n") {
			if v, ok := strings.CutPrefix(l, "holdfast_http_refusals_held "); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		t.Fatalf("no refusals gauge in /metrics")
		return 0
	}
	var wg sync.WaitGroup
	for i, key := range []string{"hf_not-a-key", "hf_" + strings.Repeat("A", 43), ""} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hr, _ := http.NewRequest("GET", e.url+"/v1/shops/1/inventory/7/1", nil)
			if key != "" {
				hr.Header.Set("Authorization", "Bearer "+key)
			}
			hr.Header.Set("X-Request-Timeout", "3s")
			res, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			res.Body.Close()
			if res.StatusCode != 401 {
				t.Errorf("request %d: %d, want 401 once its deadline ends", i, res.StatusCode)
			}
		}()
	}
	waitFor(t, "three refusals held", func() bool { return held() == 3 })
	e.expect(req{method: "GET", path: "/v1/shops/1/inventory/7/1", key: "shop1"}, 200, "")
	wg.Wait()
	if n := held(); n != 0 {
		t.Fatalf("%d refusals still held after their answers", n)
	}
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)*p)/100].Round(100 * time.Microsecond)
}
