package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// The gate runs one check of unknown credentials at a time and keeps the
// slot idle for authHoldFactor times a refused check, so a flood of wrong
// passwords gets at most 1/(1+hold) of the time; requests over the cap get
// 429, and credentials accepted once skip the gate.
func TestAuthGateCapsWrongPasswordChecks(t *testing.T) {
	t.Parallel()
	const check = 20 * time.Millisecond
	var inCheck, maxInCheck, checks atomic.Int64
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, _ := r.BasicAuth(); pass == "good" {
			fmt.Fprintln(w, "ok") // the toolkit's cache: no bcrypt
			return
		}
		n := inCheck.Add(1)
		for m := maxInCheck.Load(); n > m && !maxInCheck.CompareAndSwap(m, n); m = maxInCheck.Load() {
		}
		checks.Add(1)
		time.Sleep(check) // stands in for bcrypt
		inCheck.Add(-1)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	})
	g := newAuthGate(authSlots, authSlotWait, authHoldFactor)
	srv := httptest.NewServer(g.in(auth))
	defer srv.Close()

	do := func(pass string) int {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		req.SetBasicAuth("prometheus", pass)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do("good"); got != http.StatusOK {
		t.Fatalf("good credentials before the flood: status %d, want 200", got)
	}

	const flood, window = 8, time.Second
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(window)
	for i := range flood {
		wg.Go(func() {
			for j := 0; time.Now().Before(deadline); j++ {
				c := do(fmt.Sprintf("wrong-%d-%d", i, j))
				mu.Lock()
				codes[c]++
				mu.Unlock()
			}
		})
	}
	time.Sleep(window / 2)
	start := time.Now()
	goodCode := do("good")
	goodTook := time.Since(start)
	wg.Wait()

	if got := maxInCheck.Load(); got > authSlots {
		t.Errorf("%d checks ran at once, want at most %d", got, authSlots)
	}
	// Each check holds its slot for (1+hold)×check at least; a request
	// sent just before the deadline may still get the slot authSlotWait
	// later.
	if max := int64((window+authSlotWait)/((1+authHoldFactor)*check)) + 1; checks.Load() > max {
		t.Errorf("%d wrong-password checks in %v, want at most %d (one per %v)", checks.Load(), window+authSlotWait, max, (1+authHoldFactor)*check)
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("no request over the cap got 429: %v", codes)
	}
	if codes[http.StatusUnauthorized] == 0 {
		t.Errorf("no wrong password got its 401: %v", codes)
	}
	if goodCode != http.StatusOK || goodTook > authSlotWait {
		t.Errorf("good credentials during the flood: status %d after %v, want 200 without waiting for a slot", goodCode, goodTook)
	}
}

// With a web config that has users, serveHTTP puts exporter-toolkit's real
// bcrypt check behind the gate: a flood of wrong passwords gets 429s, and a
// scraper with the right password is still served.
func TestAuthGateInFrontOfToolkit(t *testing.T) {
	t.Parallel()
	// The default cost, as users' hashes have (50–70 ms a check here):
	// eight flooders then queue past the slot's wait and get 429s. At the
	// minimum cost a check took about 1 ms and whether any client waited
	// 250 ms depended on the machine's load.
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(file, []byte("basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wc := webConfig("127.0.0.1:0")
	wc.WebConfigFile = &file
	d := New(nil, Options{Web: wc}, slog.New(slog.DiscardHandler))
	addr := serve(t, d, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }))

	do := func(pass string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		req.SetBasicAuth("prometheus", pass)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do("secret"); got != http.StatusOK {
		t.Fatalf("right password: status %d, want 200", got)
	}
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for i := range 8 {
		wg.Go(func() {
			for j := 0; time.Now().Before(deadline); j++ {
				c := do(fmt.Sprintf("wrong-%d-%d", i, j))
				mu.Lock()
				codes[c]++
				mu.Unlock()
			}
		})
	}
	time.Sleep(time.Second)
	good := do("secret")
	wg.Wait()
	if good != http.StatusOK {
		t.Errorf("right password during the flood: status %d, want 200", good)
	}
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusUnauthorized] == 0 {
		t.Errorf("wrong-password flood: statuses %v, want both 401 (checked) and 429 (over the cap)", codes)
	}
}
