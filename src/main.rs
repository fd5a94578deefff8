//! Starts the command line or, without a command, the workbench (`cli::main`).

fn main() {
    piecewise_lab::cli::main()
}
