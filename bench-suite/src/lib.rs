//! The benchmark suite: one criterion matrix over every client.
//!
//! One place lists the cells ([`matrix`]), one place holds everything about each operation
//! ([`ops`]: its keys, its timed call, its verification, its baselines); one generic path benches
//! any client ([`ops::run_sync`], and [`ops::run_async`] for the natively async ones); the
//! [`runner`] (behind `benches/matrix.rs` and the `kvbench-matrix` binary) owns the servers, the
//! CPU placement, the keys and the clean-up, verifies every (cell, client) pair before timing it,
//! then measures its cost per operation ([`costs`]; bytes on the wire from the server's own
//! counters, [`wire`]) and adds same-run baselines ([`baselines`]; for a server on another host,
//! its network floor: [`network_floor`]).
//! A cell with many callers runs them the way each client's spec declares ([`callers`]); an
//! open-loop cell runs them at fixed offered rates instead ([`open_loop`]).
//! Everything lands in `reports/<run-id>/results.json` ([`results`]).
#![deny(missing_docs)]

pub mod baselines;
pub mod callers;
pub mod cell;
pub mod child;
pub mod contender;
pub mod costs;
pub mod count;
pub mod crew;
pub mod drivers;
pub mod environment;
pub mod matrix;
pub mod network_floor;
pub mod open_loop;
pub mod ops;
pub mod plan;
pub mod results;
pub mod runner;
pub mod verify;
pub mod wire;
