//! One module per verb. A verb imports no other: what two of them (or a
//! verb and the web page) share is in `task/`, `show` or `print`.

pub mod cancel;
pub mod cron;
pub mod delete;
pub mod describe;
pub mod get;
pub mod logs;
pub mod rerun;
pub mod result;
pub mod run;
pub mod wait;
