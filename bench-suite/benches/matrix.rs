//! `cargo bench --bench matrix`: the benchmark matrix (see [`kvbench_bench_suite::runner`]).
//!
//! `cargo bench --bench matrix -- --test` runs every pair once, verification included; so does
//! `cargo test --bench matrix`, with the debug build `make test` has already made.

use kvbench_bench_suite::costs::CountingAllocator;

/// Counts allocations for the cost pass; passes everything to the system allocator.
#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() -> std::process::ExitCode {
    kvbench_bench_suite::runner::main()
}
