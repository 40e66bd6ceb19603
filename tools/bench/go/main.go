// SPDX-License-Identifier: MIT
// Go twin of the corokit benchmarks (design.md section 7). Same contract as
// tools/bench/bench_common.h:  go_bench SHAPE|list [WORKERS [ITERS [SIZE]]]
// WORKERS sets GOMAXPROCS. Go has no thread outside its scheduler: where a
// shape says "a plain thread", the main goroutine plays it.
package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	numSpawn   = 10000
	busyJobs   = 8
	stallDur   = 10 * time.Microsecond
	numPings   = 1000
	yieldTasks = 200
	numYields  = 1000
	chainLen   = 1000
	fibN       = 27
	ioTrips    = 10000
	numTimers  = 10000
	timerMaxNs = 10000000
	memJobs    = 1000000
	timerSeed  = 0x5eedc0c0
)

var shapes = []string{"spawn_many_local", "spawn_many_remote", "spawn_many_remote_busy",
	"ping_pong", "yield_many", "chained_spawn", "fib", "io_pingpong", "timers", "memory",
	"io_under_load", "io_pingpong_64", "io_busy_50", "io_busy_500", "io_busy_2000",
	"timed_waits", "udp_pingpong"}

const (
	ioPairs    = 64          // io_pingpong_64: pairs sharing the round trips
	busyPairs  = 32          // io_busy_H: pairs...
	busyTrips  = 200         // ...round trips each
	timedJobs  = 10000       // timed_waits: goroutines (pairs of)...
	timedWaits = 100         // ...each waiting this many times...
	timedDur   = time.Second // ...with this timeout
)

var workers int

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func timerNs(i int) int64 { return int64(mix(timerSeed+uint64(i)) % (timerMaxNs + 1)) }

// tokio's stall(): spin 10 us, yielding the thread (not the goroutine)
func stall() {
	t0 := time.Now()
	for time.Since(t0) < stallDur {
		syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
	}
}

func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	var size, res int64
	fmt.Sscan(string(b), &size, &res)
	return res * int64(os.Getpagesize())
}

func report(shape string, ns int64, extra string) {
	fmt.Printf("bench=%s system=go workers=%d ns=%d%s\n", shape, workers, ns, extra)
}

func spawnManyLocal(n int) int64 {
	var rem int64 = int64(n)
	done := make(chan struct{}, 1)
	t0 := time.Now()
	go func() { // the spawner is itself a goroutine (a running job)
		for i := 0; i < n; i++ {
			go func() {
				if atomic.AddInt64(&rem, -1) == 0 {
					done <- struct{}{}
				}
			}()
		}
	}()
	<-done
	return int64(time.Since(t0))
}

// a plain thread spawns n empty jobs, then joins them (one WaitGroup: Go's
// idiomatic join; a channel per goroutine would add n allocations)
func spawnManyRemote(n int) int64 {
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() { wg.Done() }()
	}
	wg.Wait()
	return int64(time.Since(t0))
}

func pingPong(n int) int64 {
	var rem int64 = int64(n)
	done := make(chan struct{}, 1)
	t0 := time.Now()
	go func() {
		for i := 0; i < n; i++ {
			go func() {
				c1 := make(chan struct{}, 1) // oneshot channels, as tokio's
				c2 := make(chan struct{}, 1)
				go func() {
					<-c1
					c2 <- struct{}{}
				}()
				c1 <- struct{}{}
				<-c2
				if atomic.AddInt64(&rem, -1) == 0 {
					done <- struct{}{}
				}
			}()
		}
	}()
	<-done
	return int64(time.Since(t0))
}

func yieldMany(tasks int) int64 {
	done := make(chan struct{}, tasks)
	t0 := time.Now()
	for i := 0; i < tasks; i++ {
		go func() {
			for j := 0; j < numYields; j++ {
				runtime.Gosched()
			}
			done <- struct{}{}
		}()
	}
	for i := 0; i < tasks; i++ {
		<-done
	}
	return int64(time.Since(t0))
}

func chain(done chan struct{}, n int) {
	if n == 0 {
		done <- struct{}{}
	} else {
		go chain(done, n-1)
	}
}

func chainedSpawn(n int) int64 {
	done := make(chan struct{}, 1)
	t0 := time.Now()
	go chain(done, n)
	<-done
	return int64(time.Since(t0))
}

func fib(n int) int64 {
	if n < 2 {
		return int64(n)
	}
	var a, b int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { a = fib(n - 1); wg.Done() }()
	go func() { b = fib(n - 2); wg.Done() }()
	wg.Wait()
	return a + b
}

func fibBench(n int) int64 {
	t0 := time.Now()
	r := make(chan int64, 1)
	go func() { r <- fib(n) }()
	v := <-r
	ns := int64(time.Since(t0))
	if n == 27 && v != 196418 {
		panic("fib(27) wrong")
	}
	return ns
}

type ioPair struct{ a, b net.Conn }

func newPair() ioPair {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		panic(err)
	}
	conn := func(fd int) net.Conn {
		f := os.NewFile(uintptr(fd), "sock")
		c, err := net.FileConn(f) // dups the fd into the netpoller
		if err != nil {
			panic(err)
		}
		f.Close()
		return c
	}
	return ioPair{conn(fds[0]), conn(fds[1])}
}

// io_under_load: every P runs back-to-back CPU-bound goroutines of 5 ms
// that never block (each starts the next of its chain); a goroutine reads a
// socketpair that a writer writes every 1 ms (8 bytes: the write's time).
// p50 and p99 of write -> the reader running with the data.  Go has no
// thread outside its scheduler: the writer is a goroutine locked to its OS
// thread, writing with a raw system call (it needs a P between writes).
func ioUnderLoad(n int) (int64, int64) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		panic(err)
	}
	f := os.NewFile(uintptr(fds[0]), "sock")
	rd, err := net.FileConn(f)
	if err != nil {
		panic(err)
	}
	f.Close()
	base := time.Now()
	var stop, live int32
	var chain func()
	chain = func() {
		t0 := time.Now()
		for time.Since(t0) < 5*time.Millisecond {
		}
		if atomic.LoadInt32(&stop) == 0 {
			go chain()
		} else {
			atomic.AddInt32(&live, -1)
		}
	}
	live = int32(workers)
	for i := 0; i < workers; i++ {
		go chain()
	}
	lat := make([]int64, n)
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 8)
		for i := 0; i < n; i++ {
			if _, err := io.ReadFull(rd, buf); err != nil {
				panic(err)
			}
			lat[i] = int64(time.Since(base)) - int64(binary.LittleEndian.Uint64(buf))
		}
		close(done)
	}()
	go func() {
		runtime.LockOSThread()
		buf := make([]byte, 8)
		for i := 0; i < n; i++ {
			time.Sleep(time.Millisecond)
			binary.LittleEndian.PutUint64(buf, uint64(time.Since(base)))
			if _, err := syscall.Write(fds[1], buf); err != nil {
				panic(err)
			}
		}
	}()
	<-done
	atomic.StoreInt32(&stop, 1)
	for atomic.LoadInt32(&live) > 0 {
		time.Sleep(time.Millisecond)
	}
	rd.Close()
	syscall.Close(fds[1])
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	k := (99*n+99)/100 - 1
	return lat[n/2], lat[k]
}

func ioPingPong(p ioPair, trips int) int64 {
	var wg sync.WaitGroup
	wg.Add(2)
	t0 := time.Now()
	go func() {
		buf := []byte{1}
		for i := 0; i < trips; i++ {
			if _, err := p.a.Write(buf); err != nil {
				panic(err)
			}
			if _, err := p.a.Read(buf); err != nil {
				panic(err)
			}
		}
		wg.Done()
	}()
	go func() {
		buf := []byte{0}
		for i := 0; i < trips; i++ {
			if _, err := p.b.Read(buf); err != nil {
				panic(err)
			}
			if _, err := p.b.Write(buf); err != nil {
				panic(err)
			}
		}
		wg.Done()
	}()
	wg.Wait()
	return int64(time.Since(t0))
}

// udp_pingpong: two goroutines bounce one udpBytes datagram between two
// unconnected UDP sockets on 127.0.0.1 (WriteToUDP to the other's
// address, ReadFromUDP taking the sender's)
const udpBytes = 32

func newUDP() *net.UDPConn {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	return c
}

func udpPingPong(a, b *net.UDPConn, trips int) int64 {
	var wg sync.WaitGroup
	wg.Add(2)
	bAddr := b.LocalAddr().(*net.UDPAddr)
	t0 := time.Now()
	go func() {
		buf := make([]byte, udpBytes)
		for i := 0; i < trips; i++ {
			if _, err := a.WriteToUDP(buf, bAddr); err != nil {
				panic(err)
			}
			if n, _, err := a.ReadFromUDP(buf); err != nil || n != udpBytes {
				panic(err)
			}
		}
		wg.Done()
	}()
	go func() {
		buf := make([]byte, udpBytes)
		for i := 0; i < trips; i++ {
			n, from, err := b.ReadFromUDP(buf)
			if err != nil || n != udpBytes {
				panic(err)
			}
			if _, err := b.WriteToUDP(buf, from); err != nil {
				panic(err)
			}
		}
		wg.Done()
	}()
	wg.Wait()
	return int64(time.Since(t0))
}

// io_pingpong_64: ioPairs pairs at once sharing the round trips
func ioPingPong64(ps []ioPair, trips int) int64 {
	per := trips / len(ps)
	if per < 1 {
		per = 1
	}
	var wg sync.WaitGroup
	wg.Add(2 * len(ps))
	t0 := time.Now()
	for _, p := range ps {
		go func(c net.Conn) {
			buf := []byte{1}
			for i := 0; i < per; i++ {
				if _, err := c.Write(buf); err != nil {
					panic(err)
				}
				if _, err := c.Read(buf); err != nil {
					panic(err)
				}
			}
			wg.Done()
		}(p.a)
		go func(c net.Conn) {
			buf := []byte{0}
			for i := 0; i < per; i++ {
				if _, err := c.Read(buf); err != nil {
					panic(err)
				}
				if _, err := c.Write(buf); err != nil {
					panic(err)
				}
			}
			wg.Done()
		}(p.b)
	}
	wg.Wait()
	return int64(time.Since(t0))
}

// io_busy_H: busyPairs pairs ping-pong busyTrips round trips each (the
// message is the writer's clock) beside one CPU-bound goroutine per P that
// works H us between runtime.Gosched (Go cannot pin them).  ns for all
// round trips, p99 of write -> reader running with the data
func ioBusy(ps []ioPair, trips int, h time.Duration) (int64, int64) {
	base := time.Now()
	var stop int32
	var hogs sync.WaitGroup
	hogs.Add(workers)
	for i := 0; i < workers; i++ {
		go func() {
			for atomic.LoadInt32(&stop) == 0 {
				t0 := time.Now()
				for time.Since(t0) < h {
				}
				runtime.Gosched()
			}
			hogs.Done()
		}()
	}
	time.Sleep(2 * time.Millisecond)
	lat := make([]int64, 2*len(ps)*trips)
	var wg sync.WaitGroup
	wg.Add(2 * len(ps))
	t0 := time.Now()
	for k, p := range ps {
		for side := 0; side < 2; side++ {
			go func(c net.Conn, first bool, lat []int64) {
				buf := make([]byte, 8)
				send := func() {
					binary.LittleEndian.PutUint64(buf, uint64(time.Since(base)))
					if _, err := c.Write(buf); err != nil {
						panic(err)
					}
				}
				for i := 0; i < trips; i++ {
					if first {
						send()
					}
					if _, err := io.ReadFull(c, buf); err != nil {
						panic(err)
					}
					lat[i] = int64(time.Since(base)) - int64(binary.LittleEndian.Uint64(buf))
					if !first {
						send()
					}
				}
				wg.Done()
			}([]net.Conn{p.a, p.b}[side], side == 0, lat[(2*k+side)*trips:(2*k+side+1)*trips])
		}
	}
	wg.Wait()
	t := int64(time.Since(t0))
	atomic.StoreInt32(&stop, 1)
	hogs.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	n := len(lat)
	return t, lat[(99*n+99)/100-1]
}

// timed_waits: timedJobs goroutines in pairs; each waits timedWaits times
// on its own channel (capacity 1: a set event) with a 1 s timeout, which
// its partner signals
func timedWaitsRun(n int) int64 {
	n &^= 1
	evs := make([]chan struct{}, n)
	for i := range evs {
		evs[i] = make(chan struct{}, 1)
	}
	var wg sync.WaitGroup
	wg.Add(n)
	t0 := time.Now()
	for i := n - 1; i >= 0; i-- {
		go func(me, peer chan struct{}, first bool) {
			t := time.NewTimer(timedDur)
			for k := 0; k < timedWaits; k++ {
				if first || k > 0 {
					select {
					case peer <- struct{}{}:
					default:
					}
				}
				if k > 0 {
					t.Reset(timedDur)
				}
				select {
				case <-me:
					if !t.Stop() {
						<-t.C
					}
				case <-t.C:
					panic("timed_waits: timed out")
				}
			}
			if !first {
				peer <- struct{}{}
			}
			wg.Done()
		}(evs[i], evs[i^1], i&1 == 0)
	}
	wg.Wait()
	return int64(time.Since(t0))
}

func timers(n int) (int64, int64) {
	late := make([]int64, n)
	var wg sync.WaitGroup
	wg.Add(n)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		go func(i int) {
			d := time.Duration(timerNs(i))
			deadline := time.Now().Add(d)
			time.Sleep(d)
			late[i] = int64(time.Since(deadline))
			wg.Done()
		}(i)
	}
	wg.Wait()
	total := int64(time.Since(t0))
	sort.Slice(late, func(x, y int) bool { return late[x] < late[y] })
	k := (99*n+99)/100 - 1
	return total, late[k]
}

func memory(n int) (int64, int64) {
	runtime.GC()
	rss0 := rssBytes()
	var ready int64
	gate := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(n)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		go func() {
			atomic.AddInt64(&ready, 1)
			<-gate
			wg.Done()
		}()
	}
	for atomic.LoadInt64(&ready) < int64(n) {
		runtime.Gosched()
	}
	ns := int64(time.Since(t0))
	time.Sleep(10 * time.Millisecond) // let the last ones park
	rss1 := rssBytes()
	close(gate)
	wg.Wait()
	return ns / int64(n), (rss1 - rss0) / int64(n)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go_bench SHAPE|list [WORKERS [ITERS [SIZE]]]")
		os.Exit(2)
	}
	shape := os.Args[1]
	if shape == "list" {
		for _, s := range shapes {
			fmt.Println(s)
		}
		return
	}
	arg := func(i int) int {
		if len(os.Args) > i {
			v, _ := strconv.Atoi(os.Args[i])
			return v
		}
		return 0
	}
	workers = arg(2)
	iters, size := arg(3), arg(4)
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	if iters <= 0 {
		switch shape {
		case "memory":
			iters = 1
		case "fib":
			iters = 3
		default:
			iters = 10
		}
	}
	def := func(d int) int {
		if size > 0 {
			return size
		}
		return d
	}
	runtime.GOMAXPROCS(workers)

	var run func() (int64, string)
	switch shape {
	case "spawn_many_local":
		n := def(numSpawn)
		run = func() (int64, string) { return spawnManyLocal(n), "" }
	case "spawn_many_remote":
		n := def(numSpawn)
		run = func() (int64, string) { return spawnManyRemote(n), "" }
	case "spawn_many_remote_busy":
		n := def(numSpawn)
		var stop int32
		var bg sync.WaitGroup
		bg.Add(busyJobs)
		for i := 0; i < busyJobs; i++ {
			go func() {
				for atomic.LoadInt32(&stop) == 0 {
					runtime.Gosched()
					stall()
				}
				bg.Done()
			}()
		}
		defer func() { atomic.StoreInt32(&stop, 1); bg.Wait() }()
		run = func() (int64, string) { return spawnManyRemote(n), "" }
	case "ping_pong":
		n := def(numPings)
		run = func() (int64, string) { return pingPong(n), "" }
	case "yield_many":
		n := def(yieldTasks)
		run = func() (int64, string) { return yieldMany(n), "" }
	case "chained_spawn":
		n := def(chainLen)
		run = func() (int64, string) { return chainedSpawn(n), "" }
	case "fib":
		n := def(fibN)
		run = func() (int64, string) { return fibBench(n), "" }
	case "io_pingpong":
		n := def(ioTrips)
		p := newPair()
		run = func() (int64, string) { return ioPingPong(p, n), "" }
	case "udp_pingpong":
		n := def(ioTrips)
		a, b := newUDP(), newUDP()
		run = func() (int64, string) { return udpPingPong(a, b, n), "" }
	case "io_under_load":
		n := def(200)
		run = func() (int64, string) {
			t, p := ioUnderLoad(n)
			return t, fmt.Sprintf(" p99_late_ns=%d", p)
		}
	case "io_pingpong_64":
		n := def(ioTrips)
		ps := make([]ioPair, ioPairs)
		for i := range ps {
			ps[i] = newPair()
		}
		run = func() (int64, string) { return ioPingPong64(ps, n), "" }
	case "io_busy_50", "io_busy_500", "io_busy_2000":
		n := def(busyTrips)
		h, _ := strconv.Atoi(shape[8:])
		ps := make([]ioPair, busyPairs)
		for i := range ps {
			ps[i] = newPair()
		}
		run = func() (int64, string) {
			t, p := ioBusy(ps, n, time.Duration(h)*time.Microsecond)
			return t, fmt.Sprintf(" p99_late_ns=%d", p)
		}
	case "timed_waits":
		n := def(timedJobs)
		run = func() (int64, string) { return timedWaitsRun(n), "" }
	case "timers":
		n := def(numTimers)
		run = func() (int64, string) {
			t, p := timers(n)
			return t, fmt.Sprintf(" p99_late_ns=%d", p)
		}
	case "memory":
		n := def(memJobs)
		for i := 0; i < iters; i++ {
			ns, b := memory(n)
			report(shape, ns, fmt.Sprintf(" bytes_per_job=%d", b))
		}
		return
	default:
		fmt.Fprintf(os.Stderr, "go_bench: unknown shape %q\n", shape)
		os.Exit(2)
	}
	run() // warm-up, not reported
	for i := 0; i < iters; i++ {
		ns, extra := run()
		report(shape, ns, extra)
	}
}
