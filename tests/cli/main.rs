//! Tests of the command line, and the fuzzer over every reader. One test binary per layer (tests/README.md has the map).

mod cli;
mod fuzz;
mod logs;
mod resume;
mod robustness;
