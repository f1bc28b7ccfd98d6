//! One module per verb; `outcome` is shared by those that wait.

pub mod cancel;
pub mod cron;
pub mod delete;
pub mod describe;
pub mod download;
pub mod get;
pub mod logs;
pub mod outcome;
pub mod rerun;
pub mod result;
pub mod run;
pub mod wait;
