//! The `kvbench-report` binary, as the Makefile calls it.

mod common;

use std::fs;
use std::process::{Command, Output};

use common::{fixture, write_run};
use serde_json::json;

fn run(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvbench-report"))
        .args(args)
        .output()
        .expect("run kvbench-report")
}

#[test]
fn render_check_and_compare() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let value = fixture();
    write_run(a.path(), &value);
    let mut other = value.clone();
    other["run"]["id"] = json!("second");
    write_run(b.path(), &other);

    for dir in [a.path(), b.path()] {
        let out = run(&["render".as_ref(), dir.as_os_str()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(dir.join("index.html").is_file() && dir.join("summary.md").is_file());
        let out = run(&["check".as_ref(), dir.as_os_str()]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(", 0 problems"), "{stdout}");
    }

    let out = run(&[
        "compare".as_ref(),
        a.path().as_os_str(),
        b.path().as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("A = 2026-11-30T09-00-00Z-fixture, B = second"),
        "{stdout}"
    );
    assert!(stdout.contains("1.000×"), "{stdout}");
    let page = b.path().join("compare-2026-11-30T09-00-00Z-fixture.html");
    assert!(page.is_file(), "{stdout}");

    let custom = a.path().join("custom.html");
    let out = run(&[
        "compare".as_ref(),
        a.path().as_os_str(),
        b.path().as_os_str(),
        "--html".as_ref(),
        custom.as_os_str(),
    ]);
    assert!(out.status.success());
    assert!(custom.is_file());
}

#[test]
fn check_fails_on_a_broken_report_and_render_on_a_missing_run() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &fixture());
    assert!(
        run(&["render".as_ref(), dir.path().as_os_str()])
            .status
            .success()
    );
    let index = dir.path().join("index.html");
    let page = fs::read_to_string(&index).unwrap();
    fs::write(
        &index,
        page.replace("</footer>", "<a href=\"gone.html\">x</a></footer>"),
    )
    .unwrap();
    let out = run(&["check".as_ref(), dir.path().as_os_str()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dead link href=\"gone.html\""));

    let missing = dir.path().join("no-such-run");
    let out = run(&["render".as_ref(), missing.as_os_str()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("results.json"));
}

#[test]
fn lessons_needs_a_source_tree_around_the_run() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &fixture());
    let out = run(&["lessons".as_ref(), dir.path().as_os_str()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no kvbench source tree found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
