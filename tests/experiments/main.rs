//! Tests of sweeps, reproductions (quick forms) and what the bundled data shows. One test binary per layer (tests/README.md has the map).

mod bundled_data;
mod paper_numbers;
mod report_tables;
mod reproduce;
mod slurm;
mod sweep;
