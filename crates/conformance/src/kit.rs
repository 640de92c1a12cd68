//! The kit as a test binary: every case a named trial, run under a deadline, against private
//! servers started for the run.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use kvbench_core::{Backend, ClientSpec};
use kvbench_servers::{Servers, StartOptions};
use libtest_mimic::{Arguments, Failed, Trial};

use crate::KitCase;

/// A case that has not finished by then has hung: fail it rather than the whole run. The
/// slowest honest case (100,000 SETs one round trip at a time, in a debug build, with client and
/// server on different cores) takes well under a minute.
const CASE_DEADLINE: Duration = Duration::from_secs(180);

fn run_with_deadline(case: KitCase) -> Result<(), Failed> {
    let (done, outcome) = mpsc::channel();
    // Detached on purpose: if the case hangs, its thread is abandoned and the process exits
    // without it once every other case has finished.
    std::thread::spawn(move || done.send(case.run()));
    match outcome.recv_timeout(CASE_DEADLINE) {
        Ok(result) => result.map_err(Failed::from),
        Err(RecvTimeoutError::Timeout) => {
            Err(format!("hung: no result after {CASE_DEADLINE:?}").into())
        }
        Err(RecvTimeoutError::Disconnected) => Err("the case panicked".into()),
    }
}

/// Optional placement: `KVBENCH_TEST_CPU=<n>` pins the kit and its private servers to CPU n.
/// Unset, the scheduler decides: on the 2-vCPU VM this was measured at 119 s for the whole kit,
/// against 259 s with everything on one CPU (the kit is CPU-bound, not latency-bound).
fn test_cpu() -> Result<Option<usize>, String> {
    let Ok(value) = std::env::var("KVBENCH_TEST_CPU") else {
        return Ok(None);
    };
    let cpu = value
        .parse()
        .map_err(|_| format!("KVBENCH_TEST_CPU={value:?}: want a CPU number"))?;
    kvbench_servers::pin_current_thread(cpu)
        .map_err(|err| format!("pinning the kit to CPU {cpu}: {err}"))?;
    eprintln!("kit: client threads and private servers pinned to CPU {cpu} (KVBENCH_TEST_CPU)");
    Ok(Some(cpu))
}

/// Runs the kit over `clients`, one named test per `client/transport/behaviour`, against
/// private servers (or `REDIS_URL` / `MEMCACHED_URL`), with libtest's command line (a filter,
/// `--list`, `--test-threads`, …). `tests/kit.rs` runs it over the suite's list; a test can run it
/// over a client that exists only in that test.
pub fn run(clients: &[ClientSpec]) -> ExitCode {
    let args = Arguments::from_args();
    let cpu = match test_cpu() {
        Ok(cpu) => cpu,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let options = StartOptions {
        redis_cpu: cpu,
        memcached_cpu: cpu,
        ..StartOptions::default()
    };
    let mut servers = match Servers::start(&options) {
        Ok(servers) => servers,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut backends = vec![Backend::Redis, Backend::Memcached];
    if clients
        .iter()
        .any(|spec| spec.backend == Backend::RedisCluster)
    {
        if let Err(err) = servers.start_cluster(&options) {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
        backends.push(Backend::RedisCluster);
    }
    let servers = Arc::new(servers);
    for backend in backends {
        let info = servers.info(backend);
        let endpoints: Vec<String> = info.endpoints.iter().map(ToString::to_string).collect();
        let origin = if info.external { "external" } else { "private" };
        eprintln!(
            "kit: {origin} {backend} {} on {}",
            info.version,
            endpoints.join(", ")
        );
    }

    let cases = crate::cases(&servers, clients);
    for case in &cases {
        if let Some(reason) = case.unsupported {
            eprintln!(
                "kit: {} is unsupported ({reason}): checking for a typed refusal",
                case.name
            );
        }
        if let Some(fewer) = case.reduced() {
            eprintln!("kit: {} uses {fewer}", case.name);
        }
        if let Some(reason) = &case.unavailable {
            eprintln!("kit: {} cannot run: {reason}", case.name);
        }
    }
    let trials = cases
        .into_iter()
        .map(|case| {
            let kind = if case.unsupported.is_some() {
                "unsupported"
            } else {
                ""
            };
            let unavailable = case.unavailable.is_some();
            Trial::test(case.name.clone(), move || run_with_deadline(case))
                .with_kind(kind)
                .with_ignored_flag(unavailable)
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    // Stop the servers before exiting: `Conclusion::exit` would skip their destructors.
    drop(servers);
    conclusion.exit_code()
}
