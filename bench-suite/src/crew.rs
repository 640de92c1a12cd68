//! The threads of a thread-per-caller client's callers, started once and parked between its
//! timed windows.
//!
//! A cell of 256 callers times each contender in many short windows of 20 ms. Starting 256
//! threads for each window and joining them after (what [`crate::callers::on_threads`] does)
//! is not measured (the window opens only once every caller has made a call) but it is waited
//! for: a later visit of Redis's GET at 256 callers took 30-31 s that way and 26-27 s with a
//! crew. A [`Crew`] starts its threads at its first window, each holding its caller's client,
//! and hands them each window's work over a channel; they wait on it between windows, as a
//! server's threads would between requests.
//!
//! A counted round (syscalls, allocations) does not use the crew: the syscall counters follow
//! only threads started after they are opened, so the crew gives its clients back
//! ([`Crew::clients`]) and the round starts threads of its own, as before.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;

use kvbench_core::{Client, Error, Result};

use crate::costs::CountingAllocator;

/// One window's work for one caller's thread.
type Task = Box<dyn FnOnce(&mut dyn Client) + Send>;

/// A caller's parked thread, holding its client.
struct Worker {
    tasks: Sender<Task>,
    thread: JoinHandle<Box<dyn Client>>,
}

/// The callers' clients: held by their parked threads once a window has run, otherwise here.
pub struct Crew {
    /// How many callers the crew was given: one whose thread panicked or failed to start is
    /// lost, and every later use fails rather than run short of it.
    callers: usize,
    idle: Vec<Box<dyn Client>>,
    workers: Vec<Worker>,
}

impl Crew {
    /// A crew of `clients`, one caller each, no thread started yet.
    pub fn new(clients: Vec<Box<dyn Client>>) -> Crew {
        Crew {
            callers: clients.len(),
            idle: clients,
            workers: Vec::new(),
        }
    }

    /// The number of callers.
    pub fn count(&self) -> usize {
        self.callers
    }

    fn short(&self, had: usize) -> Error {
        Error::Protocol(format!(
            "{} of {} callers lost (their threads panicked or failed to start)",
            self.callers - had,
            self.callers
        ))
    }

    /// The clients, their threads (if started) ended first: for work that must start threads
    /// of its own.
    pub fn clients(&mut self) -> Result<&mut [Box<dyn Client>]> {
        for worker in self.workers.drain(..) {
            // Closing the channel ends the thread's loop; it returns the client.
            drop(worker.tasks);
            if let Ok(client) = worker.thread.join() {
                self.idle.push(client);
            }
        }
        match self.idle.len() {
            had if had == self.callers => Ok(&mut self.idle),
            had => Err(self.short(had)),
        }
    }

    /// Runs `caller(i, client)` on every caller's thread at once, released together through a
    /// barrier; each caller's outcome, in order (an error for one that panicked). The threads'
    /// start (at the first call) and the hand-over are set-up: their allocations are not
    /// counted.
    pub fn run<T: Send + 'static>(
        &mut self,
        caller: impl Fn(usize, &mut dyn Client) -> T + Send + Sync + 'static,
    ) -> Result<Vec<Result<T>>> {
        let counting = CountingAllocator::pause();
        if let Err(err) = self.ready() {
            CountingAllocator::enable(counting);
            return Err(err);
        }
        let callers = self.callers;
        let caller = Arc::new(caller);
        let (start, end) = (
            Arc::new(Barrier::new(callers + 1)),
            Arc::new(Barrier::new(callers + 1)),
        );
        // A slot per caller, filled before its thread reaches the end barrier: no allocation on
        // a caller's thread once released.
        let outcomes: Arc<Vec<Mutex<Option<Result<T>>>>> =
            Arc::new((0..callers).map(|_| Mutex::new(None)).collect());
        for (i, worker) in self.workers.iter().enumerate() {
            let (caller, start, end, outcomes) = (
                Arc::clone(&caller),
                Arc::clone(&start),
                Arc::clone(&end),
                Arc::clone(&outcomes),
            );
            let task: Task = Box::new(move |client: &mut dyn Client| {
                start.wait();
                let outcome = catch_unwind(AssertUnwindSafe(|| caller(i, client)))
                    .map_err(|_| Error::Protocol("a caller panicked".into()));
                *outcomes[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
                end.wait();
            });
            // The thread is alive ([`Crew::ready`]) and nothing outside a task's guard can
            // panic, so it holds the receiver until its sender is dropped: the send cannot fail.
            let _ = worker.tasks.send(task);
        }
        start.wait();
        CountingAllocator::enable(counting);
        end.wait();
        Ok((outcomes.iter())
            .map(|slot| {
                let outcome = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                outcome.unwrap_or_else(|| Err(Error::Protocol("a caller did not report".into())))
            })
            .collect())
    }

    /// Every caller's thread started and alive.
    fn ready(&mut self) -> Result<()> {
        if self
            .workers
            .iter()
            .any(|worker| worker.thread.is_finished())
        {
            // A thread ended early: the barriers of a run would wait for it forever.
            self.clients()?;
        }
        self.start()?;
        match self.workers.len() {
            had if had == self.callers => Ok(()),
            had => Err(self.short(had)),
        }
    }

    /// Starts a thread for each idle client (a client whose thread could not start is lost).
    fn start(&mut self) -> Result<()> {
        for mut client in std::mem::take(&mut self.idle) {
            let (tasks, received) = channel::<Task>();
            let caller = self.workers.len();
            let thread = std::thread::Builder::new()
                .name(format!("caller {caller}"))
                .spawn(move || {
                    while let Ok(task) = received.recv() {
                        task(client.as_mut());
                    }
                    client
                })
                .map_err(Error::Io)?;
            self.workers.push(Worker { tasks, thread });
        }
        Ok(())
    }
}

impl Drop for Crew {
    /// Ends the threads; the clients close with them.
    fn drop(&mut self) {
        let _ = self.clients();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that answers every read with its caller's number.
    struct Numbered {
        number: usize,
    }

    impl Client for Numbered {
        fn get(&mut self, _key: &[u8]) -> Result<Option<Vec<u8>>> {
            Ok(Some(self.number.to_string().into_bytes()))
        }
        fn set(&mut self, _key: &[u8], _value: &[u8]) -> Result<()> {
            unreachable!("the tests only read")
        }
        fn set_ex(&mut self, _key: &[u8], _value: &[u8], _ttl_secs: u32) -> Result<()> {
            unreachable!("the tests only read")
        }
        fn delete(&mut self, _key: &[u8]) -> Result<bool> {
            unreachable!("the tests only read")
        }
    }

    fn crew(callers: usize) -> Crew {
        Crew::new(
            (0..callers)
                .map(|number| Box::new(Numbered { number }) as Box<dyn Client>)
                .collect(),
        )
    }

    #[test]
    fn every_caller_runs_its_own_client_on_the_same_thread_each_window() {
        let mut crew = crew(8);
        let mut threads = Vec::new();
        for window in 0..3 {
            let outcomes = crew
                .run(|i, client| {
                    let reply = client.get(b"k").unwrap().unwrap();
                    (i, reply, std::thread::current().id())
                })
                .unwrap();
            let outcomes: Vec<_> = outcomes.into_iter().map(Result::unwrap).collect();
            for (i, (caller, reply, _)) in outcomes.iter().enumerate() {
                assert_eq!(*caller, i);
                assert_eq!(reply, i.to_string().as_bytes(), "caller {i}'s own client");
            }
            let ids: Vec<_> = outcomes.iter().map(|(_, _, id)| *id).collect();
            match window {
                0 => threads = ids,
                _ => assert_eq!(ids, threads, "the threads are parked, not started again"),
            }
        }
        assert_eq!(crew.count(), 8);
        // Given back in caller order, for a counted round's threads.
        let clients = crew.clients().unwrap();
        for (i, client) in clients.iter_mut().enumerate() {
            assert_eq!(client.get(b"k").unwrap().unwrap(), i.to_string().as_bytes());
        }
        assert_eq!(crew.count(), 8);
        // And taken up again by the next run.
        let outcomes = crew
            .run(|i, client| (i, client.get(b"k").unwrap()))
            .unwrap();
        assert!(
            outcomes
                .into_iter()
                .map(Result::unwrap)
                .all(|(i, reply)| reply == Some(i.to_string().into_bytes()))
        );
    }

    #[test]
    fn a_panicking_caller_is_an_error_and_the_others_finish() {
        let mut crew = crew(4);
        let outcomes = crew
            .run(|i, client| {
                assert_ne!(i, 2, "caller 2 fails");
                client.get(b"k").unwrap();
                i
            })
            .unwrap();
        assert!(outcomes[2].is_err());
        for i in [0, 1, 3] {
            assert_eq!(*outcomes[i].as_ref().unwrap(), i);
        }
        // The crew goes on: the panic was caught on the caller's thread.
        let again = crew.run(|i, _| i).unwrap();
        assert!(again.iter().all(Result::is_ok));
    }
}
