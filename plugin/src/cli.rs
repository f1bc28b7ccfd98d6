//! The command line, as kubectl users expect it: `kubectl longtask VERB`,
//! `-n/--namespace`, `--context`, `--kubeconfig`, `-A` where it makes sense,
//! and an example per command in `--help`.

use std::time::Duration;

use clap::{Args, Parser, Subcommand};

/// Run long work on Kubernetes with longtask: submit, follow, wait, fetch
/// the result, cancel, run again.
#[derive(Parser, Debug)]
#[command(name = "kubectl-longtask", bin_name = "kubectl longtask", version)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Where to talk to, as kubectl takes it.
#[derive(Args, Debug, Clone)]
pub struct Global {
    /// Namespace (default: the kubeconfig context's, else "default").
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// Kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true)]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// User to impersonate for the operation, as with kubectl --as.
    #[arg(long = "as", global = true, value_name = "USER")]
    pub as_user: Option<String>,
    /// Group to impersonate (repeat for several), as with kubectl --as-group.
    #[arg(long = "as-group", global = true, value_name = "GROUP")]
    pub as_group: Vec<String>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Create a Task running COMMAND [ARGS...], optionally wait for it or follow its logs.
    #[command(after_help = "Examples:\n  \
        kubectl longtask run train --cpu 2 --memory 4Gi --follow -- python train.py --epochs 3\n  \
        kubectl longtask run nightly --retries 2 --timeout 1h --wait -- sh -c 'make report'\n  \
        kubectl longtask run hello --dry-run=client -o yaml -- echo hi > hello.yaml")]
    Run(Box<RunArgs>),
    /// Print a Task's logs: waits for its pod, follows retries and shards.
    #[command(after_help = "Examples:\n  \
        kubectl longtask logs train -f\n  \
        kubectl longtask logs sweep --shard 3\n  \
        kubectl longtask logs flaky --all-attempts")]
    Logs(LogsArgs),
    /// Wait until Tasks finish; exit 0 if all completed, non-zero otherwise.
    #[command(after_help = "Examples:\n  \
        kubectl longtask wait train\n  \
        kubectl longtask wait a b c --timeout 30m")]
    Wait(WaitArgs),
    /// Print a Task's exact result bytes (decoded, digest checked), or download its output files.
    #[command(after_help = "Examples:\n  \
        kubectl longtask result train > model.json\n  \
        kubectl longtask result train -o model.json\n  \
        kubectl longtask result sweep --shard 3\n  \
        kubectl longtask result train -o outdir/                  # every output file, into outdir/\n  \
        kubectl longtask result train -o outdir/ --file model.bin --file plots/loss.png\n  \
        kubectl longtask result train --file metrics.json | jq .   # one output to stdout")]
    Result(ResultArgs),
    /// List Tasks with their phase, queue position and why they wait.
    #[command(
        alias = "list",
        after_help = "Examples:\n  \
        kubectl longtask get\n  \
        kubectl longtask get train\n  \
        kubectl longtask list -A"
    )]
    Get(GetArgs),
    /// Status, conditions, Events and the log tail of a Task on one screen.
    #[command(after_help = "Example:\n  kubectl longtask describe train")]
    Describe(NameArg),
    /// Cancel Tasks (spec.cancel: the program gets SIGTERM, the result written so far is kept).
    #[command(after_help = "Examples:\n  \
        kubectl longtask cancel train\n  \
        kubectl longtask cancel a b c")]
    Cancel(NamesArg),
    /// Create a new Task from an existing Task's spec.
    #[command(after_help = "Examples:\n  \
        kubectl longtask rerun nightly\n  \
        kubectl longtask rerun nightly --name nightly-again --wait")]
    Rerun(RerunArgs),
    /// Delete finished Tasks (with their Jobs, pods and results).
    #[command(after_help = "Examples:\n  \
        kubectl longtask delete --finished\n  \
        kubectl longtask delete --finished --older-than 7d\n  \
        kubectl longtask delete --finished --keep 10")]
    Delete(DeleteArgs),
    /// Create a CronTask: run COMMAND [ARGS...] on a cron schedule (run's flags apply).
    #[command(after_help = "Examples:\n  \
        kubectl longtask cron nightly --schedule '0 2 * * *' --time-zone Europe/Berlin -- sh -c 'make report'\n  \
        kubectl longtask cron sync --schedule '*/15 * * * *' --concurrency-policy Forbid -- ./sync")]
    Cron(Box<CronArgs>),
    /// Start a run of a CronTask now (named <name>-m<unix seconds>, marked manual).
    #[command(after_help = "Example:\n  kubectl longtask trigger nightly")]
    Trigger(NameArg),
    /// Suspend CronTasks: no new run starts (active runs go on).
    #[command(after_help = "Example:\n  kubectl longtask suspend nightly")]
    Suspend(NamesArg),
    /// Resume suspended CronTasks (the latest time missed within catchUpSeconds runs).
    #[command(after_help = "Example:\n  kubectl longtask resume nightly")]
    Resume(NamesArg),
    /// List CronTasks with their schedule, last and next run.
    #[command(after_help = "Examples:\n  \
        kubectl longtask crons\n  \
        kubectl longtask crons -A")]
    Crons(GetArgs),
    /// Serve a live page of the Tasks on 127.0.0.1 (your own rights), and open it.
    #[command(after_help = "Examples:\n  \
        kubectl longtask ui\n  \
        kubectl longtask ui -A --port 8765 --no-browser")]
    Ui(UiArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_help = "Example:\n  source <(kubectl-longtask completion bash)")]
    Completion(CompletionArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Name of the new Task.
    pub name: String,
    /// CPU request, e.g. 500m or 2.
    #[arg(long)]
    pub cpu: Option<String>,
    /// Memory request, e.g. 512Mi.
    #[arg(long)]
    pub memory: Option<String>,
    /// Environment variable K=V (repeatable).
    #[arg(long = "env", short = 'e', value_name = "K=V")]
    pub env: Vec<String>,
    /// Retries after a failed attempt (0..10).
    #[arg(long)]
    pub retries: Option<i32>,
    /// Time limit, e.g. 90s, 30m, 2h.
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Run as an Indexed Job of N shards.
    #[arg(long)]
    pub shards: Option<i32>,
    /// At most P shards at once.
    #[arg(long)]
    pub parallelism: Option<i32>,
    /// Run the program in this image (the worker is injected); default: the
    /// worker image, which has sh and coreutils.
    #[arg(long)]
    pub image: Option<String>,
    /// Run the pod as this ServiceAccount of the namespace (it must exist).
    #[arg(long, value_name = "NAME")]
    pub service_account: Option<String>,
    /// Start only once Task NAME succeeded (NAME:Finished: once it ended
    /// either way); repeatable. Its result is in $LONGTASK_INPUTS/NAME/.
    #[arg(long, value_name = "NAME")]
    pub after: Vec<String>,
    /// Wait until the Task finishes; exit code follows the outcome.
    #[arg(long, conflicts_with = "follow")]
    pub wait: bool,
    /// Stream the logs until the Task finishes; exit code follows the outcome.
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// "client": print the Task instead of creating it.
    #[arg(long, value_name = "client")]
    pub dry_run: Option<String>,
    /// Output format with --dry-run: yaml or json.
    #[arg(short = 'o', long, default_value = "yaml")]
    pub output: String,
    /// The program and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct CronArgs {
    /// When runs start (cron, 5 fields or 6 with seconds first, or a macro
    /// such as @daily); repeatable.
    #[arg(long, required = true, value_name = "CRON")]
    pub schedule: Vec<String>,
    /// IANA time zone of the schedule, e.g. Europe/Berlin (default UTC).
    #[arg(long, value_name = "ZONE")]
    pub time_zone: Option<String>,
    /// Allow, Forbid, Replace or BufferOne (default Allow).
    #[arg(long, value_name = "POLICY")]
    pub concurrency_policy: Option<String>,
    /// How late a missed time may still run, e.g. 10m (default 1h).
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub catch_up: Option<Duration>,
    /// Suspend after this many failed runs in a row.
    #[arg(long, value_name = "N")]
    pub stop_after_failures: Option<i32>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct LogsArgs {
    pub name: String,
    /// Follow until the Task finishes (across retries).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Print the logs of every attempt, not only the newest.
    #[arg(long)]
    pub all_attempts: bool,
    /// Only this shard of a sharded Task.
    #[arg(long)]
    pub shard: Option<u32>,
}

#[derive(Args, Debug)]
pub struct WaitArgs {
    #[arg(required = true)]
    pub names: Vec<String>,
    /// Give up after this long, e.g. 10m (exit code 124).
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
}

#[derive(Args, Debug)]
pub struct ResultArgs {
    pub name: String,
    /// Write the result to FILE instead of standard output. When the Task
    /// has output files, PATH is a directory (made if missing) and each
    /// output is downloaded into it under its name, digest checked.
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Only this output file (repeatable; without -o, one to standard output).
    #[arg(long = "file", value_name = "NAME", conflicts_with = "shard")]
    pub files: Vec<String>,
    /// Only this shard's result (default for sharded Tasks: all, in order).
    #[arg(long)]
    pub shard: Option<u32>,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// Task names (default: all in the namespace).
    pub names: Vec<String>,
    /// All namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

#[derive(Args, Debug)]
pub struct UiArgs {
    /// Every namespace the kubeconfig's user may list.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Port on 127.0.0.1 (default: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Print the URL only; do not open a browser.
    #[arg(long)]
    pub no_browser: bool,
}

#[derive(Args, Debug)]
pub struct NameArg {
    pub name: String,
}

#[derive(Args, Debug)]
pub struct NamesArg {
    #[arg(required = true)]
    pub names: Vec<String>,
}

#[derive(Args, Debug)]
pub struct RerunArgs {
    pub name: String,
    /// Name of the new Task (default: NAME-rerun-<random suffix>).
    #[arg(long = "name")]
    pub new_name: Option<String>,
    /// Wait until the new Task finishes.
    #[arg(long, conflicts_with = "follow")]
    pub wait: bool,
    /// Stream the new Task's logs until it finishes.
    #[arg(long, short = 'f')]
    pub follow: bool,
}

#[derive(Args, Debug)]
pub struct DeleteArgs {
    /// Delete finished (Completed or Failed) Tasks. Required: this command
    /// never deletes running ones.
    #[arg(long, required = true)]
    pub finished: bool,
    /// Only those finished longer ago than this, e.g. 7d, 12h.
    #[arg(long, value_parser = parse_duration)]
    pub older_than: Option<Duration>,
    /// Keep the newest N finished Tasks (per namespace).
    #[arg(long)]
    pub keep: Option<usize>,
    /// All namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Print what would be deleted, delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct CompletionArgs {
    pub shell: clap_complete::Shell,
}

/// `90s`, `30m`, `2h`, `7d`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 90s, 30m, 2h, 7d)"))?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(format!("{s:?}: unit must be s, m, h or d")),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(604_800)));
        assert!(parse_duration("1w").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn run_takes_everything_after_dashes() {
        let cli = Cli::try_parse_from([
            "kubectl-longtask",
            "-n",
            "ns",
            "run",
            "t",
            "--cpu",
            "2",
            "--wait",
            "--",
            "sh",
            "-c",
            "echo --wait",
        ])
        .expect("parses");
        let Command::Run(r) = cli.command else {
            panic!("not run")
        };
        assert_eq!(cli.global.namespace.as_deref(), Some("ns"));
        assert!(r.wait);
        assert_eq!(r.command, ["sh", "-c", "echo --wait"]);
    }

    #[test]
    fn the_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
