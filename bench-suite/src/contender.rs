//! A contender, connected: a client with one caller or with the cell's callers, a floor, or a
//! baseline tool. Whatever it is, it answers the same two questions: run one block of calls
//! ([`Live::block`]), and how long one call takes ([`Live::calibrate`], which sizes its blocks).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::baselines::{LoopbackFloor, Tool};
use crate::callers::Callers;
use crate::costs;
use crate::drivers::{Args, Driver, Workload};
use crate::network_floor::Pinger;
use crate::results::Latency;

/// One block's outcome: operations done (items, in a cell of many items), the seconds they
/// took, and the bench process's CPU time meanwhile (none for a baseline tool, which is another
/// process).
#[derive(Debug, Clone, Copy)]
pub struct Block {
    /// Operations (items) done.
    pub ops: f64,
    /// Seconds they took.
    pub seconds: f64,
    /// The process's CPU time during the block: every thread (`CLOCK_PROCESS_CPUTIME_ID`), and
    /// `getrusage`'s user and system split of it (tick-sampled: right over many blocks only).
    pub cpu: Option<Cpu>,
}

/// CPU time of the bench process over a stretch of work.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu {
    /// Every thread's CPU time.
    pub total: Duration,
    /// The user-space part, as `getrusage` samples it.
    pub user: Duration,
    /// The kernel part, as `getrusage` samples it.
    pub system: Duration,
}

impl Cpu {
    fn now() -> Cpu {
        let (user, system) = costs::user_and_system_time();
        Cpu {
            total: costs::process_cpu_time(),
            user,
            system,
        }
    }

    fn since(self, before: Cpu) -> Cpu {
        Cpu {
            total: self.total.saturating_sub(before.total),
            user: self.user.saturating_sub(before.user),
            system: self.system.saturating_sub(before.system),
        }
    }

    /// The share `part` of it (the timed calls' share of a window's calls).
    fn share(self, part: f64) -> Cpu {
        Cpu {
            total: self.total.mul_f64(part),
            user: self.user.mul_f64(part),
            system: self.system.mul_f64(part),
        }
    }
}

impl Block {
    /// Operations per second.
    pub fn rate(&self) -> f64 {
        self.ops / self.seconds.max(1e-12)
    }
}

/// What runs a contender's calls.
pub enum Runner<'w> {
    /// One caller: a client (or the floor's client against the floor's server), each call one
    /// operation of `args`.
    One {
        /// The connected client.
        driver: Driver,
        /// One call's arguments (the first items only, where the plan says so).
        args: Args<'w>,
        /// The floor's server, when this is the loopback floor: joined when done.
        floor: Option<LoopbackFloor>,
    },
    /// The cell's callers: a block is a [`crate::callers::Window`] of `window`, each call one
    /// operation of one caller.
    Many {
        /// The connected callers.
        callers: Callers,
        /// The length of a block's timed stretch ([`Live::calibrate`]'s block).
        window: Duration,
    },
    /// A remote server's network floor: one round trip of its smallest command per call.
    Pinger(Pinger),
    /// redis-benchmark or memaslap: one short run of its own per block.
    Tool {
        /// The tool.
        tool: Tool,
        /// Its latency percentiles from the last run, where it reports them.
        latency: Option<Latency>,
    },
}

/// A connected contender of a visit, and how big its blocks are.
pub struct Live<'w> {
    /// The row's name.
    pub name: &'static str,
    /// What runs it.
    pub runner: Runner<'w>,
    /// Calls per block ([`Live::calibrate`]).
    pub calls_per_block: u64,
    /// Operations one call does: its items, times the callers.
    pub ops_per_call: u64,
    /// How long a block took when calibrated.
    pub block_time: Duration,
    /// How long one call took in verification, where it was the same call the blocks make.
    pub one_call: Option<Duration>,
}

impl<'w> Live<'w> {
    /// A contender with blocks of one call until calibrated.
    pub fn new(name: &'static str, runner: Runner<'w>, ops_per_call: u64) -> Live<'w> {
        Live {
            name,
            runner,
            calls_per_block: 1,
            ops_per_call,
            block_time: Duration::ZERO,
            one_call: None,
        }
    }

    /// Warms the contender up for about `block` and sizes its blocks to `block`: the calls that
    /// fit at the speed just seen, at least one. A tool sizes its own runs. A call already seen
    /// to take a block or more ([`Live::one_call`], from verification: a deep pipeline, seconds
    /// through some libraries) makes a block of one call without another.
    pub fn calibrate(&mut self, w: &Workload, block: Duration) -> Result<()> {
        if let Runner::Tool { tool, .. } = &mut self.runner {
            let started = Instant::now();
            tool.calibrate(block.as_secs_f64().max(0.1))?;
            self.block_time = started.elapsed();
            return Ok(());
        }
        if let Runner::Many { callers, window } = &mut self.runner {
            // One window warms the callers up and says how long a block takes in all.
            *window = block;
            let started = Instant::now();
            callers.window(w, block)?;
            self.block_time = started.elapsed();
            return Ok(());
        }
        if let Some(took) = self.one_call.filter(|took| *took >= block) {
            self.calls_per_block = 1;
            self.block_time = took;
            return Ok(());
        }
        // Calls double until a batch takes a block's length: the first ones warm the
        // connection, the server's key and the caches.
        let mut sizing = Sizing::new(block);
        let mut calls = 1u64;
        loop {
            let started = Instant::now();
            self.calls(w, calls)?;
            if sizing.ends_with(calls, started.elapsed()) || calls >= 1 << 20 {
                break;
            }
            calls *= 2;
        }
        let per_call = sizing.per_call();
        self.calls_per_block = (block.as_secs_f64() / per_call.as_secs_f64().max(1e-9)) as u64;
        self.calls_per_block = self.calls_per_block.max(1);
        self.block_time = per_call * self.calls_per_block as u32;
        Ok(())
    }

    /// One block: [`Live::calls_per_block`] calls, timed as a whole (a tool's run, at its own
    /// reported rate).
    pub fn block(&mut self, w: &Workload) -> Result<Block> {
        if let Runner::Tool { tool, latency } = &mut self.runner {
            let run = tool.run()?;
            *latency = run.latency.or(*latency);
            return Ok(Block {
                ops: run.ops,
                seconds: run.seconds,
                cpu: None,
            });
        }
        if let Runner::Many { callers, window } = &mut self.runner {
            let before = Cpu::now();
            let timed = callers.window(w, *window)?;
            let cpu = Cpu::now().since(before);
            let items = self.ops_per_call as f64 / callers.count() as f64;
            return Ok(Block {
                ops: timed.calls as f64 * items,
                seconds: timed.elapsed.as_secs_f64(),
                cpu: Some(cpu.share(timed.calls as f64 / timed.all_calls.max(1) as f64)),
            });
        }
        let calls = self.calls_per_block;
        let before = Cpu::now();
        let seconds = self.calls(w, calls)?.as_secs_f64();
        Ok(Block {
            ops: (calls * self.ops_per_call) as f64,
            seconds,
            cpu: Some(Cpu::now().since(before)),
        })
    }

    /// `n` calls back to back; their wall time (for many callers, from the first caller's start
    /// to the last one's end, their threads' start not counted).
    fn calls(&mut self, w: &Workload, n: u64) -> Result<Duration> {
        match &mut self.runner {
            Runner::One { driver, args, .. } => {
                let started = Instant::now();
                driver.run_n(w, args, n, &mut |_| {})?;
                Ok(started.elapsed())
            }
            // Not reached from `calibrate` or `block`, which time many callers over a window;
            // `n` calls each is what `n` calls means here.
            Runner::Many { callers, .. } => Ok(callers.round(w, n, false)?.elapsed),
            Runner::Pinger(pinger) => {
                let started = Instant::now();
                pinger.timed(n, &mut |_| {})?;
                Ok(started.elapsed())
            }
            Runner::Tool { tool, .. } => {
                let run = tool.run().context("a baseline tool's run")?;
                Ok(Duration::from_secs_f64(run.seconds))
            }
        }
    }

    /// Ends the contender: closes its connections, and waits for the floor's server thread.
    pub fn finish(self) {
        if let Runner::One {
            driver,
            floor: Some(floor),
            ..
        } = self.runner
        {
            drop(driver);
            floor.join();
        }
    }
}

/// The calibration's doubling batches, seen one by one: the time per call a block is sized
/// from ([`Sizing::per_call`]), and whether they have said enough.
///
/// A block is sized from the fastest batch that lasted a block, not from the last batch: a
/// stall of 2 ms in a batch of two calls would otherwise end the doubling at once and size
/// every block at two calls, mostly its start and end. For the same reason a batch that
/// reaches a block's length only by stalling (a per-call time over twice the fastest) does not
/// end it; the warm-up's cap of four blocks does. Nor is it sized from a batch shorter than a
/// block: a first call can be fast where every later one is slow (a SET of 100 KiB sent token
/// by token with Nagle on took 65 us, then ~44 ms each, waiting for a delayed ACK), and blocks
/// sized from it took 1.4 s instead of one call's 44 ms.
#[derive(Debug)]
struct Sizing {
    block: Duration,
    warmed: Duration,
    /// The fastest per call of any batch: what "steady" is measured against.
    fastest: Duration,
    /// The fastest per call of a batch that lasted a block.
    fastest_of_a_block: Option<Duration>,
}

impl Sizing {
    fn new(block: Duration) -> Self {
        Sizing {
            block,
            warmed: Duration::ZERO,
            fastest: Duration::MAX,
            fastest_of_a_block: None,
        }
    }

    /// Takes one batch of `calls` that took `took`; true when the doubling may stop.
    fn ends_with(&mut self, calls: u64, took: Duration) -> bool {
        let per_call = took / calls.max(1) as u32;
        self.fastest = self.fastest.min(per_call);
        if took >= self.block {
            let fastest = self
                .fastest_of_a_block
                .map_or(per_call, |f| f.min(per_call));
            self.fastest_of_a_block = Some(fastest);
        }
        self.warmed += took;
        let steady = per_call <= self.fastest * 2;
        (took >= self.block && steady) || self.warmed >= self.block * 4
    }

    /// The time per call to size blocks from: the fastest batch that lasted a block, or, if
    /// none did (the warm-up's cap ended it), the fastest batch.
    fn per_call(&self) -> Duration {
        self.fastest_of_a_block.unwrap_or(self.fastest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn a_stall_in_a_small_batch_does_not_size_the_blocks() {
        // Calls of 13 us, a block of 2 ms: the batch of two stalls for 2 ms. The doubling goes
        // on past it, and the blocks are sized from a steady batch.
        let mut sizing = Sizing::new(us(2_000));
        assert!(!sizing.ends_with(1, us(30)));
        assert!(!sizing.ends_with(2, us(2_026)));
        let mut calls = 4;
        while !sizing.ends_with(calls, us(13) * calls as u32) {
            calls *= 2;
        }
        assert_eq!(calls, 256);
        assert_eq!(sizing.per_call(), us(13));
    }

    #[test]
    fn a_steady_batch_of_a_block_ends_the_doubling() {
        let mut sizing = Sizing::new(us(2_000));
        assert!(!sizing.ends_with(64, us(64 * 20)));
        assert!(sizing.ends_with(128, us(128 * 20)));
        assert_eq!(sizing.per_call(), us(20));
    }

    #[test]
    fn a_fast_first_call_does_not_size_the_blocks_of_slow_ones() {
        // A SET of 100 KiB token by token with Nagle on: the first call 65 us, every later one
        // ~44 ms. Sized from the first, a block of 2 ms would be 31 calls, 1.4 s; it is one.
        let mut sizing = Sizing::new(us(2_000));
        assert!(!sizing.ends_with(1, us(65)));
        assert!(sizing.ends_with(2, us(88_000)));
        assert_eq!(sizing.per_call(), us(44_000));
    }

    #[test]
    fn the_warm_up_ends_after_four_blocks_however_it_went() {
        // Every batch after the first stalls: the doubling still ends, and the blocks are sized
        // from the batches that lasted a block, which is what the later calls do.
        let mut sizing = Sizing::new(us(2_000));
        assert!(!sizing.ends_with(1, us(50)));
        assert!(!sizing.ends_with(2, us(3_000)));
        assert!(sizing.ends_with(4, us(6_000)));
        assert_eq!(sizing.per_call(), us(1_500));
    }

    #[test]
    fn without_a_batch_of_a_block_the_fastest_batch_sizes_the_blocks() {
        // Batches that never reach a block before the cap (calls getting faster as they warm).
        let mut sizing = Sizing::new(us(2_000));
        assert!(!sizing.ends_with(1, us(1_900)));
        assert!(!sizing.ends_with(2, us(1_900)));
        assert!(!sizing.ends_with(4, us(1_900)));
        assert!(!sizing.ends_with(8, us(1_900)));
        assert!(sizing.ends_with(16, us(1_900)));
        assert_eq!(sizing.per_call(), us(1_900) / 16);
    }
}
