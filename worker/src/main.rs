//! longtask-worker: runs a Task's program inside its Job's pod and reports
//! the result to the operator through the ConfigMap `<task>-result`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use longtask_worker::task;

/// Runs a program for a longtask Task and records its result.
#[derive(Parser, Debug)]
#[command(name = "longtask-worker", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run PROGRAM with ARGS, pass its output through, write the result.
    Run {
        /// The program and its arguments, after `--`.
        #[arg(last = true, required = true, num_args = 1.., value_name = "PROGRAM [ARGS]")]
        program: Vec<String>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let Cmd::Run { program } = Cli::parse().command;
    task::run_task(&program).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_takes_everything_after_dashes() {
        let cli = Cli::try_parse_from(["w", "run", "--", "sh", "-c", "echo --x"]).unwrap();
        let Cmd::Run { program } = cli.command;
        assert_eq!(program, vec!["sh", "-c", "echo --x"]);
        assert!(Cli::try_parse_from(["w", "run"]).is_err());
    }
}
