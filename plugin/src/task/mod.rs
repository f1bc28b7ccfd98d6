//! What the commands and the web page do to a Task, shared by both: a
//! command of `cmd/` is the verb (its flags, what it prints), the module of
//! the same name here what it does, which the page calls too. The log
//! follower (`logs`) and the wait for a Task's end (`outcome`).

pub mod cancel;
pub mod cron;
pub mod logs;
pub mod outcome;
pub mod rerun;
pub mod result;
pub mod run;
pub mod waiting;
