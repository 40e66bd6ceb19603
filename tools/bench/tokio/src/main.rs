// SPDX-License-Identifier: MIT
//! tokio twin of the corokit benchmarks (design.md section 7). The shapes are
//! tokio's benches/rt_multi_threaded.rs, with design.md's sizes. Same contract
//! as tools/bench/bench_common.h:  tokio_bench SHAPE|list [WORKERS [ITERS [SIZE]]]
//! WORKERS = the multi-thread runtime's worker_threads.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::{self, Runtime};
use tokio::sync::{oneshot, Notify};

const NUM_SPAWN: usize = 10_000;
const BUSY_JOBS: usize = 8;
const STALL_DUR: Duration = Duration::from_micros(10);
const NUM_PINGS: usize = 1_000;
const YIELD_TASKS: usize = 200;
const NUM_YIELD: usize = 1_000;
const CHAIN: usize = 1_000;
const FIB_N: usize = 27;
const IO_TRIPS: usize = 10_000;
const NUM_TIMERS: usize = 10_000;
const TIMER_MAX_NS: u64 = 10_000_000;
const MEM_JOBS: usize = 1_000_000;
const TIMER_SEED: u64 = 0x5eedc0c0;

const BLOCKING_CALLS: usize = 10_000;
const BLOCKING_JOBS: usize = 8;

const SHAPES: [&str; 19] = [
    "spawn_many_local", "spawn_many_remote", "spawn_many_remote_busy", "ping_pong",
    "yield_many", "chained_spawn", "fib", "io_pingpong", "timers", "memory", "io_under_load",
    "blocking_roundtrip", "blocking_roundtrip_par", "io_pingpong_64", "udp_pingpong", "io_busy_50",
    "io_busy_500", "io_busy_2000", "timed_waits",
];
const IO_PAIRS: usize = 64;
const BUSY_PAIRS: usize = 32;
const BUSY_TRIPS: usize = 200;
const TIMED_JOBS: usize = 10_000;
const TIMED_WAITS: usize = 100;
const TIMED_DUR: Duration = Duration::from_secs(1);
const UL_WRITES: usize = 200;

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

fn timer_ns(i: usize) -> u64 {
    mix(TIMER_SEED.wrapping_add(i as u64)) % (TIMER_MAX_NS + 1)
}

fn stall() {
    let now = Instant::now();
    while now.elapsed() < STALL_DUR {
        std::thread::yield_now();
    }
}

fn rss_bytes() -> i64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let res: i64 = s.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(-1);
    // the page size of every Linux x86-64 / arm64 (4 KiB) box we run on
    res * 4096
}

fn rt(workers: usize) -> Runtime {
    runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap()
}

fn ns(t0: Instant) -> u64 {
    t0.elapsed().as_nanos() as u64
}

/// design.md: the spawner is a running job. tokio's own bench spawns from
/// block_on, whose future runs on the calling (non-worker) thread, so its
/// spawns take the remote path; here the spawner is a spawned task.
fn spawn_many_local(rt: &Runtime, n: usize) -> u64 {
    let (tx, rx) = mpsc::sync_channel(1);
    let rem = Arc::new(AtomicUsize::new(n));
    let t0 = Instant::now();
    rt.spawn(async move {
        for _ in 0..n {
            let tx = tx.clone();
            let rem = rem.clone();
            tokio::spawn(async move {
                if 1 == rem.fetch_sub(1, Relaxed) {
                    tx.send(()).unwrap();
                }
            });
        }
    });
    rx.recv().unwrap();
    ns(t0)
}

/// tokio's spawn_many_remote_idle / busy1
fn spawn_many_remote(rt: &Runtime, n: usize) -> u64 {
    let mut handles = Vec::with_capacity(n);
    let t0 = Instant::now();
    for _ in 0..n {
        handles.push(rt.spawn(async {}));
    }
    rt.block_on(async {
        for handle in handles.drain(..) {
            handle.await.unwrap();
        }
    });
    ns(t0)
}

fn ping_pong(rt: &Runtime, n: usize) -> u64 {
    let (done_tx, done_rx) = mpsc::sync_channel(1);
    let rem = Arc::new(AtomicUsize::new(n));
    let t0 = Instant::now();
    rt.block_on(async {
        tokio::spawn(async move {
            for _ in 0..n {
                let rem = rem.clone();
                let done_tx = done_tx.clone();
                tokio::spawn(async move {
                    let (tx1, rx1) = oneshot::channel();
                    let (tx2, rx2) = oneshot::channel();
                    tokio::spawn(async move {
                        rx1.await.unwrap();
                        tx2.send(()).unwrap();
                    });
                    tx1.send(()).unwrap();
                    rx2.await.unwrap();
                    if 1 == rem.fetch_sub(1, Relaxed) {
                        done_tx.send(()).unwrap();
                    }
                });
            }
        });
        done_rx.recv().unwrap();
    });
    ns(t0)
}

fn yield_many(rt: &Runtime, tasks: usize) -> u64 {
    let (tx, rx) = mpsc::sync_channel(tasks);
    let t0 = Instant::now();
    for _ in 0..tasks {
        let tx = tx.clone();
        rt.spawn(async move {
            for _ in 0..NUM_YIELD {
                tokio::task::yield_now().await;
            }
            tx.send(()).unwrap();
        });
    }
    for _ in 0..tasks {
        rx.recv().unwrap();
    }
    ns(t0)
}

fn chain(done_tx: mpsc::SyncSender<()>, n: usize) {
    if n == 0 {
        done_tx.send(()).unwrap();
    } else {
        tokio::spawn(async move {
            chain(done_tx, n - 1);
        });
    }
}

fn chained_spawn(rt: &Runtime, n: usize) -> u64 {
    let (done_tx, done_rx) = mpsc::sync_channel(1);
    let t0 = Instant::now();
    rt.block_on(async {
        tokio::spawn(async move {
            chain(done_tx, n);
        });
        done_rx.recv().unwrap();
    });
    ns(t0)
}

fn fib(n: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if n < 2 {
            return n;
        }
        let a = tokio::spawn(fib(n - 1));
        let b = tokio::spawn(fib(n - 2));
        a.await.unwrap() + b.await.unwrap()
    })
}

fn fib_bench(rt: &Runtime, n: usize) -> u64 {
    let t0 = Instant::now();
    let v = rt.block_on(async { tokio::spawn(fib(n as u64)).await.unwrap() });
    let t = ns(t0);
    assert!(n != 27 || v == 196418);
    t
}

fn io_pingpong(rt: &Runtime, trips: usize) -> u64 {
    let (mut a, mut b) = rt.block_on(async { tokio::net::UnixStream::pair().unwrap() });
    let t0 = Instant::now();
    rt.block_on(async move {
        let ja = tokio::spawn(async move {
            let mut buf = [1u8; 1];
            for _ in 0..trips {
                a.write_all(&buf).await.unwrap();
                a.read_exact(&mut buf).await.unwrap();
            }
        });
        let jb = tokio::spawn(async move {
            let mut buf = [0u8; 1];
            for _ in 0..trips {
                b.read_exact(&mut buf).await.unwrap();
                b.write_all(&buf).await.unwrap();
            }
        });
        ja.await.unwrap();
        jb.await.unwrap();
    });
    ns(t0)
}

// udp_pingpong: two tasks bounce one UDP_BYTES datagram between two
// unconnected UdpSockets on 127.0.0.1 (send_to the other's address,
// recv_from taking the sender's)
const UDP_BYTES: usize = 32;

fn udp_pingpong(rt: &Runtime, trips: usize) -> u64 {
    let (a, b) = rt.block_on(async {
        let a = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let b = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        (a, b)
    });
    let b_addr = b.local_addr().unwrap();
    let t0 = Instant::now();
    rt.block_on(async move {
        let ja = tokio::spawn(async move {
            let mut buf = [1u8; UDP_BYTES];
            for _ in 0..trips {
                a.send_to(&buf, b_addr).await.unwrap();
                let (n, _) = a.recv_from(&mut buf).await.unwrap();
                assert_eq!(n, UDP_BYTES);
            }
        });
        let jb = tokio::spawn(async move {
            let mut buf = [0u8; UDP_BYTES];
            for _ in 0..trips {
                let (n, from) = b.recv_from(&mut buf).await.unwrap();
                assert_eq!(n, UDP_BYTES);
                b.send_to(&buf, from).await.unwrap();
            }
        });
        ja.await.unwrap();
        jb.await.unwrap();
    });
    ns(t0)
}

// io_pingpong_64: IO_PAIRS pairs at once sharing the round trips
fn io_pingpong_64(rt: &Runtime, trips: usize) -> u64 {
    let per = (trips / IO_PAIRS).max(1);
    let pairs: Vec<_> = (0..IO_PAIRS)
        .map(|_| rt.block_on(async { tokio::net::UnixStream::pair().unwrap() }))
        .collect();
    let t0 = Instant::now();
    rt.block_on(async move {
        let mut hs = Vec::new();
        for (mut a, mut b) in pairs {
            hs.push(tokio::spawn(async move {
                let mut buf = [1u8; 1];
                for _ in 0..per {
                    a.write_all(&buf).await.unwrap();
                    a.read_exact(&mut buf).await.unwrap();
                }
            }));
            hs.push(tokio::spawn(async move {
                let mut buf = [0u8; 1];
                for _ in 0..per {
                    b.read_exact(&mut buf).await.unwrap();
                    b.write_all(&buf).await.unwrap();
                }
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
    ns(t0)
}

// io_busy_H: BUSY_PAIRS pairs ping-pong BUSY_TRIPS round trips each (the
// message is the writer's clock) beside one CPU-bound task per worker that
// works H us between yield_now (tokio cannot pin them).  ns for all round
// trips, p99 of write -> reader running with the data
fn io_busy(rt: &Runtime, workers: usize, trips: usize, h_us: u64) -> (u64, u64) {
    let base = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let hogs: Vec<_> = (0..workers)
        .map(|_| {
            let stop = stop.clone();
            rt.spawn(async move {
                while !stop.load(Relaxed) {
                    let t0 = Instant::now();
                    while t0.elapsed() < Duration::from_micros(h_us) {
                        std::hint::spin_loop();
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(2));
    let pairs: Vec<_> = (0..BUSY_PAIRS)
        .map(|_| rt.block_on(async { tokio::net::UnixStream::pair().unwrap() }))
        .collect();
    let t0 = Instant::now();
    let mut lat: Vec<u64> = rt.block_on(async move {
        let mut hs = Vec::new();
        for (mut a, mut b) in pairs {
            hs.push(tokio::spawn(async move {
                let mut lat = Vec::with_capacity(trips);
                let mut buf = [0u8; 8];
                for _ in 0..trips {
                    let t = base.elapsed().as_nanos() as u64;
                    a.write_all(&t.to_le_bytes()).await.unwrap();
                    a.read_exact(&mut buf).await.unwrap();
                    lat.push(base.elapsed().as_nanos() as u64 - u64::from_le_bytes(buf));
                }
                lat
            }));
            hs.push(tokio::spawn(async move {
                let mut lat = Vec::with_capacity(trips);
                let mut buf = [0u8; 8];
                for _ in 0..trips {
                    b.read_exact(&mut buf).await.unwrap();
                    lat.push(base.elapsed().as_nanos() as u64 - u64::from_le_bytes(buf));
                    let t = base.elapsed().as_nanos() as u64;
                    b.write_all(&t.to_le_bytes()).await.unwrap();
                }
                lat
            }));
        }
        let mut all = Vec::new();
        for h in hs {
            all.extend(h.await.unwrap());
        }
        all
    });
    let t = ns(t0);
    stop.store(true, SeqCst);
    rt.block_on(async move {
        for h in hogs {
            h.await.unwrap();
        }
    });
    lat.sort_unstable();
    let n = lat.len();
    let k = ((99 * n + 99) / 100).max(1) - 1;
    (t, lat[k])
}

// timed_waits: TIMED_JOBS tasks in pairs; each waits TIMED_WAITS times for
// its own Notify with a 1 s timeout, which its partner notifies
fn timed_waits(rt: &Runtime, n: usize) -> u64 {
    let n = n & !1;
    let evs: Vec<Arc<Notify>> = (0..n).map(|_| Arc::new(Notify::new())).collect();
    let t0 = Instant::now();
    rt.block_on(async {
        let mut hs = Vec::with_capacity(n);
        for i in (0..n).rev() {
            let me = evs[i].clone();
            let peer = evs[i ^ 1].clone();
            let first = i & 1 == 0;
            hs.push(tokio::spawn(async move {
                for k in 0..TIMED_WAITS {
                    if first || k > 0 {
                        peer.notify_one();
                    }
                    tokio::time::timeout(TIMED_DUR, me.notified()).await.unwrap();
                }
                if !first {
                    peer.notify_one();
                }
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
    ns(t0)
}

// io_under_load: every worker runs back-to-back CPU-bound tasks of 5 ms that
// never await (each spawns the next of its chain); a task reads a socketpair
// that a plain thread writes every 1 ms (8 bytes: the write's time). p50 and
// p99 of write -> the reader running with the data. tokio has no priority.
fn ul_chain(stop: Arc<AtomicBool>, live: Arc<AtomicUsize>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(5) {
            std::hint::spin_loop();
        }
        if !stop.load(Relaxed) {
            tokio::spawn(ul_chain(stop, live));
        } else {
            live.fetch_sub(1, SeqCst);
        }
    })
}

fn io_under_load(rt: &Runtime, workers: usize, n: usize) -> (u64, u64) {
    use std::io::Write;
    let (mut w, r) = std::os::unix::net::UnixStream::pair().unwrap();
    r.set_nonblocking(true).unwrap();
    let mut r = rt.block_on(async { tokio::net::UnixStream::from_std(r) }).unwrap();
    let base = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let live = Arc::new(AtomicUsize::new(workers));
    for _ in 0..workers {
        rt.spawn(ul_chain(stop.clone(), live.clone()));
    }
    let reader = rt.spawn(async move {
        let mut lat = Vec::with_capacity(n);
        let mut buf = [0u8; 8];
        for _ in 0..n {
            r.read_exact(&mut buf).await.unwrap();
            lat.push(base.elapsed().as_nanos() as u64 - u64::from_le_bytes(buf));
        }
        lat
    });
    let writer = std::thread::spawn(move || {
        for _ in 0..n {
            std::thread::sleep(Duration::from_millis(1));
            let t = base.elapsed().as_nanos() as u64;
            w.write_all(&t.to_le_bytes()).unwrap();
        }
    });
    writer.join().unwrap();
    let mut lat = rt.block_on(reader).unwrap();
    stop.store(true, SeqCst);
    while live.load(SeqCst) > 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    lat.sort_unstable();
    let k = ((99 * n + 99) / 100).max(1) - 1;
    (lat[n / 2], lat[k])
}

/// blocking_roundtrip(_par): an empty closure through spawn_blocking and
/// back, n times one after the other from one task, or n / BLOCKING_JOBS
/// times from each of BLOCKING_JOBS tasks at once
fn blocking_roundtrip(rt: &Runtime, n: usize, jobs: usize) -> u64 {
    let t0 = Instant::now();
    rt.block_on(async {
        let handles: Vec<_> = (0..jobs)
            .map(|_| {
                tokio::spawn(async move {
                    for i in 0..n / jobs {
                        let r = tokio::task::spawn_blocking(move || std::hint::black_box(i))
                            .await
                            .unwrap();
                        assert_eq!(r, i);
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
    });
    ns(t0)
}

fn timers(rt: &Runtime, n: usize) -> (u64, u64) {
    let t0 = Instant::now();
    let mut late: Vec<u64> = rt.block_on(async {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                rt.spawn(async move {
                    let d = Duration::from_nanos(timer_ns(i));
                    let deadline = Instant::now() + d;
                    tokio::time::sleep(d).await;
                    Instant::now().saturating_duration_since(deadline).as_nanos() as u64
                })
            })
            .collect();
        let mut v = Vec::with_capacity(n);
        for h in handles {
            v.push(h.await.unwrap());
        }
        v
    });
    let total = ns(t0);
    late.sort_unstable();
    let k = (99 * n + 99) / 100 - 1;
    (total, late[k])
}

fn memory(rt: &Runtime, n: usize) -> (u64, i64) {
    let rss0 = rss_bytes();
    let gate = Arc::new(Notify::new());
    let ready = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let gate = gate.clone();
            let ready = ready.clone();
            rt.spawn(async move {
                let w = gate.notified();
                ready.fetch_add(1, SeqCst);
                w.await;
            })
        })
        .collect();
    while ready.load(SeqCst) < n {
        std::thread::yield_now();
    }
    let t = ns(t0);
    std::thread::sleep(Duration::from_millis(10)); // let the last ones park
    let rss1 = rss_bytes();
    // notified() registers lazily at its first poll: wake until all are done
    rt.block_on(async {
        for h in handles {
            while !h.is_finished() {
                gate.notify_waiters();
                tokio::task::yield_now().await;
            }
        }
    });
    (t / n as u64, (rss1 - rss0) / n as i64)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        eprintln!("usage: tokio_bench SHAPE|list [WORKERS [ITERS [SIZE]]]");
        std::process::exit(2);
    }
    let shape = args[1].as_str();
    if shape == "list" {
        for s in SHAPES {
            println!("{}", s);
        }
        return;
    }
    let arg = |i: usize| -> usize { args.get(i).and_then(|v| v.parse().ok()).unwrap_or(0) };
    let mut workers = arg(2);
    if workers == 0 {
        workers = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    }
    let mut iters = arg(3);
    if iters == 0 {
        iters = match shape {
            "memory" => 1,
            "fib" => 3,
            _ => 10,
        };
    }
    let size = arg(4);
    let def = |d: usize| if size > 0 { size } else { d };
    if !SHAPES.contains(&shape) {
        eprintln!("tokio_bench: unknown shape {:?}", shape);
        std::process::exit(2);
    }
    let rt = rt(workers);
    let report = |ns: u64, extra: String| {
        println!("bench={} system=tokio workers={} ns={}{}", shape, workers, ns, extra);
    };
    let flag = Arc::new(AtomicBool::new(true));
    if shape == "spawn_many_remote_busy" {
        for _ in 0..BUSY_JOBS {
            let flag = flag.clone();
            rt.spawn(async move {
                while flag.load(Relaxed) {
                    tokio::task::yield_now().await;
                    stall();
                }
            });
        }
    }
    if shape == "memory" {
        for _ in 0..iters {
            let (t, b) = memory(&rt, def(MEM_JOBS));
            report(t, format!(" bytes_per_job={}", b));
        }
        return;
    }
    let run = |rt: &Runtime| -> (u64, String) {
        match shape {
            "spawn_many_local" => (spawn_many_local(rt, def(NUM_SPAWN)), String::new()),
            "spawn_many_remote" | "spawn_many_remote_busy" => {
                (spawn_many_remote(rt, def(NUM_SPAWN)), String::new())
            }
            "ping_pong" => (ping_pong(rt, def(NUM_PINGS)), String::new()),
            "yield_many" => (yield_many(rt, def(YIELD_TASKS)), String::new()),
            "chained_spawn" => (chained_spawn(rt, def(CHAIN)), String::new()),
            "fib" => (fib_bench(rt, def(FIB_N)), String::new()),
            "io_pingpong" => (io_pingpong(rt, def(IO_TRIPS)), String::new()),
            "io_pingpong_64" => (io_pingpong_64(rt, def(IO_TRIPS)), String::new()),
            "udp_pingpong" => (udp_pingpong(rt, def(IO_TRIPS)), String::new()),
            "io_busy_50" | "io_busy_500" | "io_busy_2000" => {
                let h: u64 = shape[8..].parse().unwrap();
                let (t, p) = io_busy(rt, workers, def(BUSY_TRIPS), h);
                (t, format!(" p99_late_ns={}", p))
            }
            "timed_waits" => (timed_waits(rt, def(TIMED_JOBS)), String::new()),
            "io_under_load" => {
                let (t, p) = io_under_load(rt, workers, def(UL_WRITES));
                (t, format!(" p99_late_ns={}", p))
            }
            "blocking_roundtrip" => (blocking_roundtrip(rt, def(BLOCKING_CALLS), 1), String::new()),
            "blocking_roundtrip_par" => {
                (blocking_roundtrip(rt, def(BLOCKING_CALLS), BLOCKING_JOBS), String::new())
            }
            "timers" => {
                let (t, p) = timers(rt, def(NUM_TIMERS));
                (t, format!(" p99_late_ns={}", p))
            }
            _ => unreachable!(),
        }
    };
    run(&rt); // warm-up, not reported
    for _ in 0..iters {
        let (t, extra) = run(&rt);
        report(t, extra);
    }
    flag.store(false, Relaxed);
}
