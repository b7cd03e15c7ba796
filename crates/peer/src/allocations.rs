//! Heap allocation counters of the whole process (docs/peer-protocol.md, revision 1.2:
//! `allocations` and `allocated_bytes` in `sample`, `window` and `stopped`, declared in
//! `capabilities`).
//!
//! The peer's global allocator is the system allocator with two counters in front: every
//! successful `alloc`, `alloc_zeroed` and `realloc` adds one allocation and its size in bytes (a
//! `realloc` is one allocation of the new size, as Go's `append` makes a new object when it
//! grows; frees are not counted, as Go's `Mallocs` and `TotalAlloc` do not count them).
//!
//! The counters are per thread, so an allocation never writes a cache line another thread
//! writes: each thread claims one slot of a static table at its first allocation (no allocation
//! is needed for that) and adds to it with a plain load and store, since only its owner writes
//! it. [`snapshot`] sums the slots claimed so far. A thread that ends leaves its slot (and its
//! counts) behind; threads beyond the table's size share one more slot with atomic additions.
//! Reading while other threads allocate sees each slot at some recent moment, which is all a
//! window edge needs. The cost is measured in docs/peer-protocol.md's "Rust peer" note and the
//! crate's README (under 2 % of the CPU per unary call), so the counter is always on.

// A global allocator is an `unsafe impl` by definition; this module is the only unsafe code of
// the peer, and it only forwards to `System` under the same contract.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// What [`CountingAllocator`] counts, as `capabilities` declares it.
pub const SOURCE: &str = "counting global allocator in front of the system allocator \
    (per-thread counters; a realloc counts as one allocation of its new size)";

/// Heap allocations and bytes allocated, cumulative since the process started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Allocations {
    /// Successful allocations (`alloc`, `alloc_zeroed`, `realloc`).
    pub count: u64,
    /// Bytes they asked for.
    pub bytes: u64,
}

impl Allocations {
    /// What was allocated between `earlier` and `self`.
    pub fn since(self, earlier: Allocations) -> Allocations {
        Allocations {
            count: self.count.saturating_sub(earlier.count),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}

/// The system allocator, counting (see the module docs).
pub struct CountingAllocator;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; counting touches no memory the allocator hands out and never allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is `System`'s.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            record(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            record(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: `pointer` came from this allocator, i.e. from `System`, with `layout`.
        unsafe { System.dealloc(pointer, layout) }
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `pointer` came from `System` with `layout`; the caller upholds the rest.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            record(new_size);
        }
        moved
    }
}

/// One thread's counters, on a cache line of their own (128 bytes: adjacent-line prefetching
/// pairs lines on x86).
#[repr(align(128))]
struct Slot {
    count: AtomicU64,
    bytes: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            count: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }

    /// Adds one allocation; only the owning thread calls this, so a load and a store suffice.
    fn add_owned(&self, bytes: u64) {
        let count = self.count.load(Ordering::Relaxed);
        self.count.store(count.wrapping_add(1), Ordering::Relaxed);
        let total = self.bytes.load(Ordering::Relaxed);
        self.bytes
            .store(total.wrapping_add(bytes), Ordering::Relaxed);
    }

    /// Adds one allocation to the slot threads share beyond the table.
    fn add_shared(&self, bytes: u64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn read(&self) -> Allocations {
        Allocations {
            count: self.count.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

/// Threads with a slot of their own: far above what one peer process starts (the runtime's
/// workers, the blocking pool, the stdin reader, the open-loop generator).
const SLOTS: usize = 1024;

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
/// Slots handed out so far (may run past [`SLOTS`]; the excess threads use [`OVERFLOW`]).
static CLAIMED: AtomicUsize = AtomicUsize::new(0);
static OVERFLOW: Slot = Slot::new();

thread_local! {
    // A const-initialised thread-local without a destructor: reading it never allocates and
    // works until the thread is gone, as the allocator needs.
    static OWN: Cell<Option<&'static Slot>> = const { Cell::new(None) };
}

/// The calling thread's slot, claimed at its first allocation.
fn own_slot() -> &'static Slot {
    OWN.with(|own| match own.get() {
        Some(slot) => slot,
        None => {
            let index = CLAIMED.fetch_add(1, Ordering::Relaxed);
            let slot = TABLE.get(index).unwrap_or(&OVERFLOW);
            own.set(Some(slot));
            slot
        }
    })
}

fn record(bytes: usize) {
    let slot = own_slot();
    let bytes = bytes as u64;
    if std::ptr::eq(slot, &OVERFLOW) {
        slot.add_shared(bytes);
    } else {
        slot.add_owned(bytes);
    }
}

/// The whole process's allocations so far: every thread's slot, summed.
pub fn snapshot() -> Allocations {
    let claimed = CLAIMED.load(Ordering::Relaxed).min(SLOTS);
    TABLE[..claimed]
        .iter()
        .chain([&OVERFLOW])
        .map(Slot::read)
        .fold(Allocations::default(), |sum, slot| Allocations {
            count: sum.count.wrapping_add(slot.count),
            bytes: sum.bytes.wrapping_add(slot.bytes),
        })
}

/// The calling thread's own allocations so far (tests: the process's other threads allocate
/// too).
pub fn this_thread() -> Allocations {
    own_slot().read()
}

/// The `capabilities` declaration: counts and bytes, and what counts them.
pub fn declared() -> rpcarena_protocol::event::AllocationCounters {
    rpcarena_protocol::event::AllocationCounters {
        counts: true,
        bytes: true,
        source: SOURCE.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;

    #[test]
    fn a_known_allocation_moves_this_threads_counters_by_exactly_itself() {
        // settle this thread's slot (its first allocation claims it)
        black_box(vec![0u8; 1]);
        let before = this_thread();
        let buffer: Vec<u8> = black_box(Vec::with_capacity(1000));
        let after = this_thread();
        assert_eq!(
            after.since(before),
            Allocations {
                count: 1,
                bytes: 1000
            }
        );
        // growing it is one more allocation of the new size; freeing it counts nothing
        let mut buffer = buffer;
        buffer.extend_from_slice(&[1; 1001]);
        let grown = this_thread().since(after);
        assert_eq!(grown.count, 1, "{grown:?}");
        assert!(grown.bytes >= 1001, "{grown:?}");
        let before_free = this_thread();
        drop(black_box(buffer));
        assert_eq!(this_thread(), before_free);
        // zeroed allocations count too
        let zeroed = black_box(vec![0u64; 512]);
        assert_eq!(
            this_thread().since(before_free),
            Allocations {
                count: 1,
                bytes: 4096
            }
        );
        drop(zeroed);
    }

    #[test]
    fn the_process_sum_includes_other_threads_also_after_they_ended() {
        let before = snapshot();
        let thread = std::thread::spawn(|| {
            let start = this_thread();
            for _ in 0..100 {
                black_box(Box::new([0u8; 64]));
            }
            this_thread().since(start)
        });
        let theirs = thread.join().expect("the thread runs");
        assert_eq!(
            theirs,
            Allocations {
                count: 100,
                bytes: 6400
            }
        );
        let grown = snapshot().since(before);
        assert!(grown.count >= 100 && grown.bytes >= 6400, "{grown:?}");
        // the sum never goes backwards
        let later = snapshot();
        assert!(later.count >= before.count + 100 && later.bytes >= before.bytes + 6400);
    }

    #[test]
    fn since_never_underflows() {
        let small = Allocations { count: 1, bytes: 2 };
        let large = Allocations { count: 5, bytes: 9 };
        assert_eq!(large.since(small), Allocations { count: 4, bytes: 7 });
        assert_eq!(small.since(large), Allocations::default());
    }
}
