/* SPDX-License-Identifier: MIT */
/* private, layer 0 (base): the library's tunables, each with its reason.
 * Changing one changes behaviour, not correctness: the protocols do not
 * depend on these values (the spin models in tools/model do not use them).
 * A few stay beside the one data structure or step they size, where that
 * code explains them: the chunked fd table (io/io_impl.h), the expiry
 * batch (io/timers.c), the dial's poll slice (io/net.c), splice's side
 * switches (io/vec.c), a ring's batches (sched/rings.c), the seat's skip
 * count (sched/seat.c), a pin record's slots (sched/pin.c), outboxes and
 * thread caches (sched/frame_impl.h, frame_tcache.c), a served list's
 * first size (sched/affinity.c). */
#ifndef COROKIT_LIB_BASE_TUNABLES_H
#define COROKIT_LIB_BASE_TUNABLES_H

/* ---- queues (sched/submit.c, sched/find.c, sched/affinity.c) ------------------- */
/* Ring sizes, per worker and priority (local, inbox) and per affinity class
 * and priority; beyond them jobs go to a mutex-guarded overflow list.  256
 * holds a spawn burst of a fork-join level without overflow (tokio: 256). */
#define CORO__LOCAL_SIZE 256
#define CORO__INBOX_SIZE 256
/* a plain thread's submission ring (NORMAL jobs it spawns;
 * lib/sched/thread_subring.c makes it with the thread's cache): full, its
 * spawns take the inboxes */
#define CORO__XQ_SIZE 1024
/* at most this many submission rings per scheduler (a live plain thread
 * that spawns holds one; an exited thread's goes to the next): the threads
 * beyond use the inboxes.  A multiple of 64, at most 64 * 64 (the two
 * levels of s->subring_bits) */
#define CORO__XQ_MAX 4096
#define CORO__CLASS_SIZE 1024
/* the ring of each queue of a narrower affinity class (the overflow list
 * takes the rest): classes are many, up to CORO__MAX_CLASSES, and most
 * hold a few jobs at a time */
#define CORO__CLASS_NARROW_SIZE 64
/* at most this many affinity classes (distinct masks) per scheduler */
#define CORO__MAX_CLASSES 4096
/* jobs coro__sharedq_pop moves from an overflow list to the ring per lock
 * taken: one lock per 128 jobs instead of one per job */
#define CORO__MQ_REFILL 128u

/* ---- fairness (sched/find.c, sched/worker.h) ------------------------------- */
/* a worker looks at the global (any-worker) queues first once every this
 * many looks, so jobs spawned from outside are not starved by local work
 * (tokio uses 61 too: prime, so it does not beat with other periods) */
#define CORO__GLOBAL_INTERVAL 61
/* runs in a row from the LIFO slot before the queues are looked at again:
 * the slot speeds up ping-pong, the bound keeps it from starving the rest */
#define CORO__LIFO_MAX 3
/* JOINING INLINE (sched/run.c): how many jobs deep a worker runs an
 * awaited child inside its parent's step (each level is a few hundred
 * bytes of the worker's C stack, plus what the bodies use) */
#define CORO__INLINE_DEPTH 32
/* a thief takes a victim's LIFO slot only after seeing it full, with no
 * new step started by the victim, for this long: a worker between two
 * steps of a chain of spawns (finishing one job, about to run the next)
 * takes about a microsecond here, and a job waits no more than this
 * behind a long step while another worker is awake and idle */
#define CORO__LIFO_STEAL_NS 5000
/* a worker that parks while a job waits in another worker's LIFO slot
 * sleeps at most this long before it looks again (worker.c park): the
 * bound on how long such a job waits behind a long step while a worker is
 * idle, at the price of that many wake-ups of an idle worker while a chain
 * of spawns runs (1,000 a second) */
#define CORO__LIFO_PARK_NS 1000000
/* the starvation bounds of priorities: after this many HIGH or NORMAL jobs
 * in a row while LOW jobs wait, one LOW job runs; after this many HIGH jobs
 * while NORMAL ones wait, one NORMAL job runs (docs/api.md, priorities) */
#define CORO__STARVE_LOW 128u
#define CORO__STARVE_NORMAL 32u
/* awaits that complete at once before a forced yield: a job whose I/O is
 * always ready cannot keep its worker forever (tokio's budget is 128) */
#define CORO__BUDGET 128
/* generator pulls (coro_gen_await) that complete at once per unit of that
 * budget: a pull is a call of the body, not an operation on the outside
 * world (tokio's budget counts only its resources, not streams), yet a job
 * pulling an endless generator still yields, after 128 x 16 pulls */
#define CORO__GEN_PULLS_PER_BUDGET 16u
/* a worker's spare units of the scheduler's live count (rt/spawn.c
 * SPARE UNITS): it adds this many at once for the jobs it spawns, and gives
 * back what it holds above this many once it holds twice as many: one
 * RMW on the shared word per 64 spawns or finishes in a burst, and none
 * while spawns and finishes alternate (chains, fork-join) */
#define CORO__LIVE_BATCH 64

/* ---- parking (sched/park.c PARKING) ----------------------------------------- */
/* the asymmetric barrier (a parking worker calls membarrier(2), a spawn
 * fences with the compiler only) is used up to this many workers and on
 * machines with up to this many online CPUs.  The kernel serialises the
 * call machine-wide, walks every online CPU's run queue and interrupts
 * each CPU that runs one of our threads, waiting for them all: a park
 * then costs more with every CPU.  Beyond either bound a spawn pays a
 * full fence instead, which costs the same on any machine */
#define CORO__MEMBARRIER_MAX_WORKERS 8
#define CORO__MEMBARRIER_MAX_CPUS 64

/* ---- spinning (base/spin.c) ------------------------------------------------ */
/* a contended coro__spin_lock pauses this many rounds, then gives the CPU
 * away at each further round: its holders keep it for a few stores, so a
 * longer wait means the holder is off its CPU */
#define CORO__SPIN_PAUSES 64u

/* ---- idling (sched/worker.c, sched/park.c, io/blocking.c) ------------------- */
/* an idle worker looks for work again this many times with a pause
 * instruction (never when oversubscribed: the holder may need our CPU)... */
#define CORO__IDLE_PAUSES 4u
/* ...then up to this many times in all, giving the CPU away in between,
 * before it parks: a park and a wake-up cost two system calls and a few
 * microseconds, a near-miss of a job pushed just after the look */
#define CORO__IDLE_LOOKS 16u
/* ...or this many, all of them sched_yield, when workers outnumber CPUs:
 * the CPU given away goes to another of our threads, which looks for the
 * same work, and a wider window of near-misses costs a system call per
 * look in every idle phase */
#define CORO__IDLE_OVERSUB_YIELDS 2u
/* an idle loop's yield that comes back later than this (ns) gave the CPU
 * to a thread that held it for about a time slice (the kernel's least is
 * 0.75 ms; our own threads' turns take microseconds): the loop then
 * sleeps (base/spin.c, LATE YIELDS) */
#define CORO__YIELD_LATE_NS 500000
/* ...unless a thread of ours outside the workers submitted work from that
 * CPU meanwhile (a spawning thread, the blocking pool): its words, one
 * per CPU modulo this many (sched/sched.h, LENT CPUS) */
#define CORO__LENT_SLOTS 64
/* a blocking-pool thread that finished a call looks for the next one this
 * long (ns) before it sleeps: a job that issues calls one after another
 * gets them handed over without a futex wake-up */
#define CORO__BLOCKING_SPIN_NS 20000
/* the blocking pool: threads at most, and how long an idle one lives (ms)
 * (tokio: 512 threads, 10 s keep-alive) */
#define CORO__BLOCKING_THREADS 512
#define CORO__BLOCKING_KEEPALIVE_MS 10000

/* ---- the tracer (sched/trace.c) -------------------------------------------- */
/* events kept per ring when COROKIT_TRACE turns tracing on (32 bytes each:
 * 256 KiB per worker; the config's .trace_events chooses otherwise) */
#define CORO__TRACE_DEFAULT_EVENTS 8192u
/* a worker's run of short steps shares one clock reading (sched/trace.h):
 * at most this many steps (a power of two; 1 = a reading per step), and
 * only while the steps of its last run averaged at most CORO__TRACE_RUN_NS
 * (a longer run drops the next to one step; a short one doubles it).  The
 * reading is most of what tracing costs a short job.  1: every step's
 * length is its own.  With runs, a run's steps share its time evenly, so
 * one long step among short ones drew them all at the average: wrong for the question
 * a trace is read for (which step took long), so the reading per step is
 * paid */
#define CORO__TRACE_RUN_MAX 1u
#define CORO__TRACE_RUN_NS 1000u
/* plain threads (not workers, not the I/O thread) that get a ring of their
 * own, written without a lock; the others share one under a spinlock */
#define CORO__TRACE_THREAD_RINGS 16
/* a plain thread reads the clock at least every this many events (and at
 * every coarse-clock tick: sched/trace.h, coro__trace_ring_thread_stamp) */
#define CORO__TRACE_THREAD_RUN 32u

/* ---- the I/O context (lib/io/) ------------------------------------------- */
/* events taken per epoll_wait */
#define CORO__IO_EVENTS 256
/* ...and per look of a worker between its jobs (coro__io_poll_now): a
 * smaller array on the worker's stack; what is left stays ready in epoll
 * for the next look or the I/O thread */
#define CORO__IO_POLL_NOW_EVENTS 64
/* while a worker holds the poll token the I/O thread still looks at the
 * epoll set this often (ns): readiness is never left unseen for longer
 * while every worker runs long jobs (the guarantee tokio lacks, #4730) */
#define CORO__IO_STANDBY_NS 1000000
/* ...but after this many looks at one unbroken hold with nothing to do it
 * sleeps, at most this long (ns) at a time (an idle scheduler's I/O thread
 * wakes ~20 times a second) */
#define CORO__IO_DEEP_LOOKS 4
#define CORO__IO_DEEP_STANDBY_NS 50000000
/* after a round that did something the I/O thread looks again without
 * sleeping for up to this many rounds: under load the next event usually
 * comes within microseconds */
#define CORO__IO_SPIN 64
/* a worker that always has a job ready still looks at the epoll set
 * without blocking (sched/worker.c, BUSY LOOKS) after this many steps
 * since its last look (tokio's event_interval is 61 ticks): one
 * epoll_wait per 61 steps is a small part of what the steps cost, and
 * while steps are short it bounds the look to well under a millisecond.
 * Steps that are long and never yield are bounded by time by the I/O
 * thread instead (CORO__IO_STANDBY_NS)... */
#define CORO__IO_POLL_STEPS 61u
/* ...and at a yield, when at least this long (ns) has passed since a
 * yield last looked.  A yield is where a job says others may run: the
 * readiness that came meanwhile is what they wait for.  The floor keeps a
 * job that yields in a tight loop from paying an epoll_wait
 * per yield: at most 50,000 looks a second per worker, a few per cent of
 * a CPU, and a wake-up waits at most this much more than the step it
 * arrived behind */
#define CORO__IO_POLL_YIELD_NS 20000
/* ...and a yield that found nothing waiting on I/O or a timer skips that
 * question for this many yields of the same worker (a wait it starts
 * itself asks again at once): a job yielding in a tight loop with
 * nothing to look for pays one question per this many yields, and a
 * wait started on another worker meanwhile is looked for after at most
 * this many more yields (or by that worker, or the I/O thread) */
#define CORO__IO_POLL_IDLE_YIELDS 8u
/* after a yield's look woke jobs and they ran, the worker looks again
 * before the yielding job runs, up to this many times while each look
 * wakes something: a conversation then moves this many hops per yield
 * instead of one.  What bounds the yielder's wait is DEFERRED YIELDS'
 * CORO__GLOBAL_INTERVAL picks (then it is queued behind the local ring
 * only), not this count: with many conversations the picks run out
 * first, and with few each look costs an epoll_wait for a handful of
 * hops; a smaller count handed the CPU back to the yielder while
 * conversations still had hops ready (sched/worker.c, with_deferred) */
#define CORO__IO_POLL_DRAIN 16u

/* ---- waiting (wait/parklot.c, wait/wtimer.c, sched/frame_*.c) --------------- */
/* the parking lot's buckets: 2^16 for even keys (objects waited on; 4 MiB
 * of 64-byte buckets, few collisions with thousands of objects waited on
 * at once) and 2^6 for a select's own key */
#define CORO__PARKLOT_BITS 16
#define CORO__PARKLOT_SEL_BITS 6
/* lot timers preallocated per scheduler: steady-state timed waits never
 * allocate */
#define CORO__TIMER_PREALLOC 256
/* empty 64 KiB frame slabs a pool keeps for any size class (2 MiB), and
 * a plain thread's cache on its returned stack besides (sched/frame_slab.c
 * DETACH): a burst of 10,000 small jobs fills about 30 slabs, and each
 * slab got again from the allocator costs an mmap and its page faults */
#define CORO__FRAME_EMPTY_MAX 32
/* of those, what a worker keeps when it parks (sched/frame_sched.c IDLE): at
 * most CORO__FRAME_EMPTY_PARK (512 KiB; 64 MiB at 128 workers), and only
 * CORO__FRAME_EMPTY_IDLE (256 KiB) beyond what its last active phase drew
 * on.  A phase that draws more than the cap gets each slab past it from
 * the allocator: one call per 64 KiB of frames, 256 frames of 256 B */
#define CORO__FRAME_EMPTY_PARK 8
#define CORO__FRAME_EMPTY_IDLE 4
/* of a plain thread's empty slabs (its returned stack), what a worker
 * going idle leaves it once its burst is over (sched/frame_sched.c TRIM):
 * a thread that stops spawning has no idle hook of its own, so what stays
 * here stays for good */
#define CORO__FRAME_THREAD_KEEP 0
/* big frame slabs (above the largest class) a pool keeps for reuse: as
 * many as a burst of fire-and-forget jobs has alive at once, or each spawn
 * past them maps fresh pages; a worker keeps CORO__FRAME_BIG_IDLE of them
 * once it parks; none above CORO__FRAME_BIG_KEEP_SIZE (sched/frame_big.c BIG
 * FRAMES) */
#define CORO__FRAME_BIG_KEEP 64
#define CORO__FRAME_BIG_IDLE 4
#define CORO__FRAME_BIG_KEEP_SIZE ((size_t)256 << 10)

#endif
