//! Running a child process within a deadline: the baseline tools and the counted children.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a child run with [`run_within`] ended, and what it printed.
pub struct Finished {
    /// Its exit status; `None` when it was still running at the deadline and was killed.
    pub status: Option<ExitStatus>,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// Runs `command` with no standard input, both outputs read while it runs (so that a full pipe
/// cannot stall it), and kills it once it has run for `deadline`, or when this process dies (a
/// redis-benchmark left behind by a stopped run spun on reconnecting to its gone server).
pub fn run_within(command: &mut Command, deadline: Duration) -> std::io::Result<Finished> {
    // Armed for the calling thread, which waits for the child below.
    kvbench_servers::die_with_parent(command);
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Ok(Finished {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set in the re-executed test binary: where its tool writes its pid.
    const PID_FILE_VAR: &str = "KVBENCH_CHILD_TEST_PID_FILE";

    #[test]
    fn a_tool_dies_when_the_bench_is_stopped() {
        tool_dies_with_the_bench(
            "child::tests::a_tool_dies_when_the_bench_is_stopped",
            libc::SIGTERM,
        );
    }

    #[test]
    fn a_tool_dies_when_the_bench_is_killed() {
        tool_dies_with_the_bench(
            "child::tests::a_tool_dies_when_the_bench_is_killed",
            libc::SIGKILL,
        );
    }

    /// Re-runs `test` as the bench (the interrupt handler installed as in a run, a tool running
    /// under [`run_within`]), sends it `signal` once the tool runs, and checks that the tool was
    /// killed rather than left running.
    fn tool_dies_with_the_bench(test: &str, signal: libc::c_int) {
        if let Some(pid_file) = std::env::var_os(PID_FILE_VAR) {
            kvbench_servers::on_interrupt(|| {}).unwrap();
            let mut tool = Command::new("sh");
            tool.args(["-c", "echo $$ > \"$0\"; exec sleep 60"])
                .arg(&pid_file);
            let _ = run_within(&mut tool, Duration::from_secs(60));
            panic!("the bench outlived its signal");
        }
        // The orphaned tool is reparented to the nearest subreaper: us, so we can reap it and
        // see what ended it.
        // SAFETY: prctl with integer arguments only.
        assert_eq!(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) }, 0);
        let pid_file = std::env::temp_dir().join(format!(
            "kvbench-child-test-{}-{signal}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&pid_file);
        let mut bench = Command::new(std::env::current_exe().unwrap())
            .args([test, "--exact", "--nocapture"])
            .env(PID_FILE_VAR, &pid_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let tool: libc::pid_t = loop {
            let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
            if let Ok(pid) = text.trim().parse() {
                break pid;
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = bench.kill();
                panic!("the bench never started its tool");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = std::fs::remove_file(&pid_file);
        // SAFETY: kill(2) on our own unreaped child.
        assert_eq!(unsafe { libc::kill(bench.id() as libc::pid_t, signal) }, 0);
        let _ = bench.wait();
        let started = Instant::now();
        let ended_by = loop {
            let mut status = 0;
            // SAFETY: waitpid on one pid with a valid status pointer.
            let reaped = unsafe { libc::waitpid(tool, &mut status, libc::WNOHANG) };
            assert!(reaped >= 0, "waitpid: {}", std::io::Error::last_os_error());
            if reaped > 0 {
                break libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status));
            }
            if started.elapsed() > Duration::from_secs(5) {
                // SAFETY: kill(2) on our own (adopted) unreaped child.
                unsafe { libc::kill(tool, libc::SIGKILL) };
                panic!("the tool was still running 5 s after the bench ended");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(ended_by, Some(libc::SIGKILL), "how the tool ended");
    }
}
