//! longtask-worker: runs a Task's program inside its Job's pod and reports
//! the result to the operator through the ConfigMap `<task>-result`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use longtask_worker::{install, task};

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
    /// Copy this binary into DIR (an init container's step when a Task
    /// runs in its own image).
    Install {
        /// The directory to copy into, e.g. a shared emptyDir.
        #[arg(value_name = "DIR")]
        dir: std::path::PathBuf,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    // rustls' ring provider for the HTTP client of uploads (as kube's).
    longtask_store::install_crypto_provider();
    match Cli::parse().command {
        Cmd::Run { program } => task::run_task(&program).await,
        Cmd::Install { dir } => match install::install(&dir) {
            Ok(path) => {
                println!("longtask-worker: installed {}", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("longtask-worker: {}", longtask_worker::chain(&e));
                ExitCode::FAILURE
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_takes_everything_after_dashes() {
        let cli = Cli::try_parse_from(["w", "run", "--", "sh", "-c", "echo --x"]).unwrap();
        let Cmd::Run { program } = cli.command else {
            panic!("not run: {:?}", cli.command);
        };
        assert_eq!(program, vec!["sh", "-c", "echo --x"]);
        assert!(Cli::try_parse_from(["w", "run"]).is_err());
    }
}
