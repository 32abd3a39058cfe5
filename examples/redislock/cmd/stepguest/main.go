// Command stepguest is the forward-step replay's program inside the qemu
// guest of examples/redislock/stepvm: worker A takes the lock on the guest's
// Redis (SET key A NX PX 30000), worker B is refused, the guest's clock is
// stepped forward (by /bin/clockstep, test/vm's stepping program), and B
// tries again at once. Redis keeps a key's expiry as an absolute wall-clock
// time, so a step past the TTL expires the lock: B gets it while A, counting
// its lease on the monotonic clock, still believes it has most of it. It
// prints one result line (kind "redis_forward_step") and refuses to run
// outside the test VM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/clockwatch/clockwatch/examples/redislock"
	"github.com/clockwatch/clockwatch/test/vm/guest"
)

// Result is what stepguest prints.
type Result struct {
	Key string `json:"key"`
	// AGot and BRefused: the lock worked before the step.
	AGot     bool `json:"a_got"`
	BRefused bool `json:"b_refused"`
	// PTTLBeforeMS is the key's PTTL just before the step.
	PTTLBeforeMS int64 `json:"pttl_before_ms"`
	// KeyAfterStep is the key's value right after the step ("" when it is
	// gone).
	KeyAfterStep string `json:"key_after_step"`
	// BGot: B took the lock after the step; OwnerAfter is the key's value
	// then.
	BGot       bool   `json:"b_got"`
	OwnerAfter string `json:"owner_after"`
	// ALockMonoNS, StepReturnedMonoNS and BLockMonoNS are CLOCK_MONOTONIC
	// when A got the lock, when clockstep returned and when B got it.
	ALockMonoNS        int64 `json:"a_lock_mono_ns"`
	StepReturnedMonoNS int64 `json:"step_returned_mono_ns"`
	BLockMonoNS        int64 `json:"b_lock_mono_ns"`
	// AStillBelievesMS is what A, counting its 30 s on the monotonic clock,
	// believes is left of its lock when B gets it.
	AStillBelievesMS int64 `json:"a_still_believes_ms"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("stepguest", flag.ContinueOnError)
	fl.SetOutput(stderr)
	addr := fl.String("addr", "127.0.0.1:6379", "the guest's Redis")
	key := fl.String("key", "comp:lock:recon:2025-09-14", "the lock's key")
	ttl := fl.Duration("ttl", 30*time.Second, "the lock's PX")
	step := fl.Duration("step", 31*time.Second, "the step of the guest's clock")
	clockstep := fl.String("clockstep", "/bin/clockstep", "test/vm's clockstep program")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if err := guest.CheckTestVM(os.DirFS("/")); err != nil {
		fmt.Fprintf(stderr, "stepguest: refusing to run: %v\n", err)
		return 3
	}
	res, err := replay(*addr, *key, *ttl, *step, *clockstep, stdout)
	if err == nil {
		err = guest.Emit(stdout, "redis_forward_step", res)
	}
	if err != nil {
		fmt.Fprintf(stderr, "stepguest: %v\n", err)
		return 1
	}
	return 0
}

func replay(addr, key string, ttl, step time.Duration, clockstep string, stdout io.Writer) (Result, error) {
	res := Result{Key: key}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer cli.Close()
	for cli.Ping(ctx).Err() != nil {
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("redis at %s never answered: %w", addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	a := redislock.NewLock(cli, key, "worker-a", ttl)
	b := redislock.NewLock(cli, key, "worker-b", ttl)
	var err error
	if res.AGot, err = a.TryAcquire(ctx); err != nil {
		return res, err
	}
	aAt := time.Now()
	res.ALockMonoNS = guest.Mono()
	got, err := b.TryAcquire(ctx)
	if err != nil {
		return res, err
	}
	res.BRefused = !got
	time.Sleep(500 * time.Millisecond)
	pttl, err := cli.PTTL(ctx, key).Result()
	if err != nil {
		return res, fmt.Errorf("PTTL before the step: %w", err)
	}
	res.PTTLBeforeMS = pttl.Milliseconds()

	cmd := exec.CommandContext(ctx, clockstep, "setoffset:"+step.String())
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("%s %s: %w", clockstep, step, err)
	}
	res.StepReturnedMonoNS = guest.Mono()

	v, err := cli.Get(ctx, key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return res, fmt.Errorf("GET after the step: %w", err)
	}
	res.KeyAfterStep = v
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if res.BGot, err = b.TryAcquire(ctx); err != nil {
			return res, err
		}
		if res.BGot {
			res.BLockMonoNS = guest.Mono()
			res.AStillBelievesMS = (ttl - time.Since(aAt)).Milliseconds()
			break
		}
	}
	if res.OwnerAfter, err = cli.Get(ctx, key).Result(); err != nil && !errors.Is(err, redis.Nil) {
		return res, fmt.Errorf("GET at the end: %w", err)
	}
	return res, nil
}
