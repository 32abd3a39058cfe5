package socket

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkUnixWrite200 is the system call the fan-out makes per
// subscriber: one write(2) of a 200-byte message to a unix stream socket.
// "idle-reader" writes while nobody waits in read (the reader drains the
// socket now and then, outside the timing); "waking-reader" writes while a
// reader thread is blocked in read(2), so the write also wakes it. The
// figures in docs/performance.md come from here.
//
//	go test -run '^$' -bench UnixWrite200 ./internal/transport/socket/
func BenchmarkUnixWrite200(b *testing.B) {
	msg := make([]byte, 200)
	pair := func(b *testing.B) (w, r int) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		return fds[0], fds[1]
	}
	b.Run("idle-reader", func(b *testing.B) {
		w, r := pair(b)
		drain := make([]byte, 64<<10)
		var spent time.Duration
		for i := 0; b.Loop(); i++ {
			t0 := time.Now()
			if _, err := unix.Write(w, msg); err != nil {
				b.Fatal(err)
			}
			spent += time.Since(t0)
			if i%100 == 99 {
				for n := 0; n < 100*len(msg); {
					k, err := unix.Read(r, drain)
					if err != nil {
						b.Fatal(err)
					}
					n += k
				}
			}
		}
		b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "write-ns/op")
	})
	b.Run("waking-reader", func(b *testing.B) {
		w, r := pair(b)
		var waiting atomic.Bool
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			buf := make([]byte, len(msg))
			for {
				waiting.Store(true)
				n, err := unix.Read(r, buf) // blocking: the descriptor is not in Go's netpoller
				if err != nil || n == 0 {
					close(done)
					return
				}
			}
		}()
		writeToSleeper(b, w, msg, &waiting)
		unix.Shutdown(w, unix.SHUT_WR)
		<-done
	})
	// As subscribers read: a goroutine parked in Go's netpoller (epoll).
	b.Run("waking-netpoll-reader", func(b *testing.B) {
		w, r := pair(b)
		if err := unix.SetNonblock(r, true); err != nil {
			b.Fatal(err)
		}
		f := os.NewFile(uintptr(r), "reader")
		var waiting atomic.Bool
		done := make(chan struct{})
		go func() {
			buf := make([]byte, len(msg))
			for {
				waiting.Store(true)
				if _, err := f.Read(buf); err != nil {
					close(done)
					return
				}
			}
		}()
		writeToSleeper(b, w, msg, &waiting)
		unix.Shutdown(w, unix.SHUT_WR)
		<-done
	})
}

// writeToSleeper times one write of msg per iteration, each made once the
// reader has said it is about to read and has had 50 µs to fall asleep in
// it.
func writeToSleeper(b *testing.B, w int, msg []byte, waiting *atomic.Bool) {
	var spent time.Duration
	for b.Loop() {
		for !waiting.Load() {
			runtime.Gosched()
		}
		waiting.Store(false)
		for t := time.Now(); time.Since(t) < 50*time.Microsecond; {
		}
		t0 := time.Now()
		if _, err := unix.Write(w, msg); err != nil {
			b.Fatal(err)
		}
		spent += time.Since(t0)
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "write-ns/op")
}
