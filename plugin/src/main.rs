//! `kubectl longtask`: a kubectl plugin (kubectl finds `kubectl-longtask`
//! on PATH) for a Task's whole life: run, logs, wait, result, get,
//! describe, cancel, rerun, delete.

mod cli;
mod client;
mod cmd;
#[cfg(test)]
mod fixtures;
mod outputs;
mod print;
mod safe;
mod show;
mod task;
mod ui;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use cli::{Cli, Command};
use client::{Error, Kube};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Exit(code)) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        // The reader went away (`| head`): stop quietly, as cat does.
        Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            print::note!("error: {}", print::chain(&e));
            ExitCode::from(1)
        }
    }
}

async fn run(cli: Cli) -> Result<(), Error> {
    if let Command::Completion(c) = &cli.command {
        let mut command = Cli::command();
        clap_complete::generate(
            c.shell,
            &mut command,
            "kubectl-longtask",
            &mut std::io::stdout(),
        );
        return Ok(());
    }
    let k = Kube::connect(&cli.global).await?;
    if let Command::Ui(a) = cli.command {
        let context = client::context_name(&cli.global);
        return ui::run(k, a, context).await;
    }
    match cli.command {
        Command::Run(a) => cmd::run::run(&k, *a).await,
        Command::Logs(a) => cmd::logs::run(&k, a).await,
        Command::Wait(a) => cmd::wait::run(&k, a).await,
        Command::Result(a) => cmd::result::run(&k, a).await,
        Command::Get(a) => cmd::get::run(&k, a).await,
        Command::Describe(a) => cmd::describe::run(&k, a).await,
        Command::Cancel(a) => cmd::cancel::run(&k, a).await,
        Command::Rerun(a) => cmd::rerun::run(&k, a).await,
        Command::Delete(a) => cmd::delete::run(&k, a).await,
        Command::Cron(a) => cmd::cron::create(&k, *a).await,
        Command::Trigger(a) => cmd::cron::trigger(&k, a).await,
        Command::Suspend(a) => cmd::cron::set_suspend(&k, a, true).await,
        Command::Resume(a) => cmd::cron::set_suspend(&k, a, false).await,
        Command::Crons(a) => cmd::cron::list(&k, a).await,
        Command::Completion(_) | Command::Ui(_) => Ok(()),
    }
}
