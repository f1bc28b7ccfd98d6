//! Tasks for unit tests, built the same way by every test:
//! `task("t").phase(Phase::Completed).completed(NOW - 60).build()`.

use crds::outputs::{OutputFile, OutputsStatus, human_size};
use crds::{Phase, Task, TaskSpec, TaskStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// The "now" of every test: a fixed instant, in seconds since the epoch.
pub const NOW: i64 = 1_800_000_000;

/// [`NOW`] as a timestamp.
pub fn now() -> Timestamp {
    at(NOW)
}

/// `secs` since the epoch as a timestamp.
pub fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).expect("valid time")
}

/// A Task named `name` in namespace "ns" running `true`, created at NOW - 1h.
pub fn task(name: &str) -> TaskBuilder {
    let mut t = Task::new(
        name,
        TaskSpec {
            command: vec!["true".into()],
            ..TaskSpec::default()
        },
    );
    t.metadata.namespace = Some("ns".into());
    t.metadata.uid = Some(format!("uid-{name}"));
    t.metadata.creation_timestamp = Some(Time(at(NOW - 3600)));
    TaskBuilder(t)
}

pub struct TaskBuilder(Task);

impl TaskBuilder {
    fn status(&mut self) -> &mut TaskStatus {
        self.0.status.get_or_insert_with(TaskStatus::default)
    }

    pub fn namespace(mut self, ns: &str) -> Self {
        self.0.metadata.namespace = Some(ns.into());
        self
    }

    pub fn created(mut self, secs: i64) -> Self {
        self.0.metadata.creation_timestamp = Some(Time(at(secs)));
        self
    }

    pub fn phase(mut self, p: Phase) -> Self {
        self.status().phase = Some(p);
        self
    }

    pub fn reason(mut self, reason: &str, message: &str) -> Self {
        let s = self.status();
        s.reason = Some(reason.into());
        s.message = Some(message.into());
        self
    }

    /// `status.queuePosition`, as the operator writes it while Queued for a slot.
    pub fn queue_position(mut self, n: i32) -> Self {
        self.status().queue_position = Some(n);
        self
    }

    pub fn attempts(mut self, n: i32) -> Self {
        self.status().attempts = Some(n);
        self
    }

    pub fn completed(mut self, secs: i64) -> Self {
        self.status().completed_at = Some(Time(at(secs)));
        self
    }

    /// `spec.after`: each of `names` must succeed.
    pub fn after(mut self, names: &[&str]) -> Self {
        self.0.spec.after = names.iter().map(|n| crds::Upstream::succeeded(n)).collect();
        self
    }

    pub fn shards(mut self, n: i32) -> Self {
        self.0.spec.shards = n;
        self
    }

    pub fn result(mut self, text: &str, truncated: bool, digest: &str) -> Self {
        let s = self.status();
        s.result = Some(text.into());
        s.result_truncated = truncated.then_some(true);
        s.result_digest = Some(digest.into());
        self
    }

    pub fn condition(mut self, type_: &str, status: &str, reason: &str, message: &str) -> Self {
        self.status().conditions.push(Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: Time(at(NOW - 30)),
            observed_generation: None,
        });
        self
    }

    /// `status.outputs` listing `files`, in store "default".
    pub fn outputs(mut self, files: &[OutputFile]) -> Self {
        let total: i64 = files.iter().map(|f| f.size).sum();
        self.status().outputs = Some(OutputsStatus {
            store: "default".into(),
            location: "s3://bucket/lt/ns/t/uid/".into(),
            count: i32::try_from(files.len()).expect("count"),
            total_bytes: total,
            size: human_size(u64::try_from(total).expect("size")),
            files: files.to_vec(),
            download_secret: None,
        });
        self
    }

    pub fn build(self) -> Task {
        self.0
    }
}

/// An output file named `name` holding `bytes`, as the status lists it.
pub fn output(name: &str, bytes: &[u8]) -> OutputFile {
    OutputFile {
        name: name.into(),
        size: i64::try_from(bytes.len()).expect("size"),
        digest: crds::result::digest(bytes),
        url: format!("s3://bucket/lt/ns/t/uid/{name}"),
    }
}
