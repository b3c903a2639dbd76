//! The `looptrace` command: parse the arguments, run the command, exit with its code.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
