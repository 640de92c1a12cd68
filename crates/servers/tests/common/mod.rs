//! Helpers the servers' integration tests share.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

/// True once no process `pid` exists (a zombie still exists: our children must be reaped).
pub fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}")).exists() {
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The CPUs process `pid` may run on, as `/proc` lists them (`0`, `0-1`).
pub fn cpus_allowed(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("Cpus_allowed_list:"))
        .unwrap();
    line.split_once(':').unwrap().1.trim().to_string()
}

/// An environment for `start_with_env`: these variables, plus the real PATH unless given.
pub fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
    let mut map: HashMap<String, OsString> = vars
        .iter()
        .map(|(name, value)| (name.to_string(), OsString::from(value)))
        .collect();
    if let Some(path) = std::env::var_os("PATH") {
        map.entry("PATH".into()).or_insert(path);
    }
    move |name| map.get(name).cloned()
}
