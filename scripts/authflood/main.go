// Command authflood measures a drill's delivery to a subscriber of a real
// clockwatch while a flood of wrong basic-auth passwords hits its HTTP port
// (issue 25, item 1). It starts the given binary on loopback with a web
// config that has one bcrypt user, subscribes, runs drills one after another
// (first without, then with the flood) and prints p50 and max of the time
// from the drill request to the subscriber reading the stepdown. It stops
// the daemon by PID.
//
//	go run ./scripts/authflood -bin /path/to/clockwatch -drills 40
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clockwatch/clockwatch/stepdown"
)

func main() {
	bin := flag.String("bin", "", "clockwatch binary")
	drills := flag.Int("drills", 40, "drills per phase")
	flooders := flag.Int("flooders", 16, "concurrent wrong-password clients")
	port := flag.Int("port", 19861, "loopback HTTP port")
	flag.Parse()
	if err := run(*bin, *drills, *flooders, *port); err != nil {
		log.Fatal(err)
	}
}

func run(bin string, drills, flooders, port int) error {
	dir, err := os.MkdirTemp("", "authflood")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.DefaultCost)
	if err != nil {
		return err
	}
	webcfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webcfg, []byte("basic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600); err != nil {
		return err
	}
	for _, d := range []string{"state", "run"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	// No time daemon on a test host: without these triggers off the state
	// stays stepdown and no drill is allowed.
	conf := filepath.Join(dir, "clockwatch.yml")
	if err := os.WriteFile(conf, []byte(`ptp:
  enabled: false
timesyncd:
  mode: "off"
stepdown:
  triggers:
    error_bound: {enabled: false}
    unsynchronized: {enabled: false}
`), 0o600); err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--config.file="+conf, "--web.listen-address="+addr, "--web.config.file="+webcfg, "--log.level=warn")
	cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+filepath.Join(dir, "state"), "RUNTIME_DIRECTORY="+filepath.Join(dir, "run"))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sock := filepath.Join(dir, "run", "stepdown.sock")
	ctx := context.Background()
	var sub *stepdown.Conn
	for i := 0; ; i++ {
		if sub, err = stepdown.Dial(ctx, sock); err == nil {
			break
		}
		if i > 200 {
			return fmt.Errorf("subscribing: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer sub.Close()
	if _, err := sub.Read(); err != nil { // hello
		return err
	}
	time.Sleep(2 * time.Second) // sources report; the state is ok

	for _, flood := range []bool{false, true} {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var codes [600]atomic.Int64
		if flood {
			for i := range flooders {
				wg.Go(func() {
					c := &http.Client{Timeout: 10 * time.Second}
					for j := 0; ; j++ {
						select {
						case <-stop:
							return
						default:
						}
						req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
						req.SetBasicAuth("prometheus", fmt.Sprintf("wrong-%d-%d", i, j))
						resp, err := c.Do(req)
						if err != nil {
							continue
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						codes[resp.StatusCode].Add(1)
					}
				})
			}
			time.Sleep(time.Second)
		}
		var lat []time.Duration
		for range drills {
			d, err := drill(ctx, sock, sub)
			if err != nil {
				close(stop)
				wg.Wait()
				return err
			}
			lat = append(lat, d)
		}
		close(stop)
		wg.Wait()
		slices.Sort(lat)
		name := "no flood"
		if flood {
			name = fmt.Sprintf("wrong-password flood (%d clients; 401: %d, 429: %d)", flooders, codes[401].Load(), codes[429].Load())
		}
		fmt.Printf("%s: drill delivery p50 %.2f ms, max %.2f ms (%d drills)\n", name,
			ms(lat[len(lat)/2]), ms(lat[len(lat)-1]), len(lat))
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// drill asks for a drill with a short hold and returns the time from the
// request to sub reading the stepdown; it waits for the resume.
func drill(ctx context.Context, sock string, sub *stepdown.Conn) (time.Duration, error) {
	c, err := stepdown.Dial(ctx, sock)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if h, err := c.Read(); err != nil {
		return 0, err
	} else if h.State != stepdown.StateOK {
		return 0, fmt.Errorf("no drill: the state is %s (%s)", h.State, h.Reason)
	}
	start := time.Now()
	if err := c.Send(stepdown.Message{Type: stepdown.TypeDrill, Reason: "drill", HoldSeconds: 0.05}); err != nil {
		return 0, err
	}
	var took time.Duration
	sub.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		m, err := sub.Read()
		if err != nil {
			return 0, fmt.Errorf("subscriber: %w", err)
		}
		if m.Type == stepdown.TypeStepdown && took == 0 {
			took = time.Since(start)
			if err := sub.Ack(m.Seq); err != nil {
				return 0, err
			}
		}
		if m.Type == stepdown.TypeResume {
			return took, nil
		}
	}
}
