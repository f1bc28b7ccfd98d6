//! What the commands and the web page do to a Task, shared by both: a
//! verb of `cmd/` keeps its flags and what it prints, the module of the
//! same name here what it does, which the page calls too. `run` (the Task
//! the flags describe, its create, `--wait`/`--follow`), `rerun`,
//! `cancel`, `result` (the checked bytes), `logs` (the follower),
//! `outcome` (the wait for a Task's end), `waiting` (what it waits for)
//! and `cron` (CronTasks read and shown). Nothing here imports `cmd/` or
//! `ui/`.

pub mod cancel;
pub mod cron;
pub mod logs;
pub mod outcome;
pub mod rerun;
pub mod result;
pub mod run;
pub mod waiting;
