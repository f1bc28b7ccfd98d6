//! A small object server on loopback for the download side of outputs
//! (issue 35): it answers `GET /<bucket>/<key>?<anything>` with the bytes
//! a test put there, the way a store answers a presigned GET (200 with
//! Content-Length, or S3's XML error), and counts the requests. The
//! plugin talks to it over real HTTP as to any store; the cases that need
//! the store itself (uploads, grants it checks) use SeaweedFS.
//! Stops on drop.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

/// What one path answers.
#[derive(Clone)]
enum Answer {
    Bytes(Arc<Vec<u8>>),
    Refuse(u16, String),
}

/// The server; `url(key)` is a link to one object.
pub struct Objects {
    addr: SocketAddr,
    answers: Arc<Mutex<HashMap<String, Answer>>>,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Objects {
    /// Starts the server on a free loopback port.
    pub fn start() -> Result<Objects> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let answers = Arc::new(Mutex::new(HashMap::new()));
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, r, s) = (answers.clone(), requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (a, r) = (a.clone(), r.clone());
                std::thread::spawn(move || serve(conn, &a, &r));
            }
        });
        Ok(Objects {
            addr,
            answers,
            requests,
            stop,
        })
    }

    /// `GET /bucket/<key>` answers `bytes`.
    pub fn put(&self, key: &str, bytes: Vec<u8>) {
        let path = format!("/bucket/{key}");
        self.answers
            .lock()
            .unwrap()
            .insert(path, Answer::Bytes(Arc::new(bytes)));
    }

    /// `GET /bucket/<key>` answers `status` with an S3 error `code`.
    pub fn refuse(&self, key: &str, status: u16, code: &str) {
        let path = format!("/bucket/{key}");
        self.answers
            .lock()
            .unwrap()
            .insert(path, Answer::Refuse(status, code.to_owned()));
    }

    /// A link to `key`, shaped like a presigned GET.
    pub fn url(&self, key: &str) -> String {
        format!(
            "http://{}/bucket/{key}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=test",
            self.addr
        )
    }

    /// Requests answered so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for Objects {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// Answers the requests of one connection until it closes.
fn serve(conn: TcpStream, answers: &Mutex<HashMap<String, Answer>>, requests: &AtomicUsize) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        // The headers, up to the blank line (a GET has no body).
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                break;
            }
        }
        requests.fetch_add(1, Ordering::SeqCst);
        let target = line.split_whitespace().nth(1).unwrap_or("/");
        let path = target.split('?').next().unwrap_or("/").to_owned();
        let answer = answers.lock().unwrap().get(&path).cloned();
        let written = match answer {
            Some(Answer::Bytes(b)) => respond(&mut out, 200, "application/octet-stream", &b),
            Some(Answer::Refuse(status, code)) => {
                let xml = format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>refused by the test</Message></Error>"
                );
                respond(&mut out, status, "application/xml", xml.as_bytes())
            }
            None => {
                let xml = "<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>";
                respond(&mut out, 404, "application/xml", xml.as_bytes())
            }
        };
        if written.is_err() {
            return;
        }
    }
}

fn respond(out: &mut TcpStream, status: u16, kind: &str, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    out.write_all(head.as_bytes())?;
    out.write_all(body)?;
    out.flush()
}

/// `sha256:<hex>` of `bytes`, as `status.outputs` lists digests.
pub fn digest(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What the operator writes once a Task that used an output store has
/// finished, written here for a Task that did not: `status.outputs`
/// listing `listed` (name, the bytes whose size and digest it records)
/// and the Secret `<task>-outputs` whose download grant links each name
/// to `link(name)`, valid until `expires` (RFC 3339).
pub fn give_outputs(
    ns: &crate::TestNs,
    task: &str,
    listed: &[(&str, &[u8])],
    link: &dyn Fn(&str) -> String,
    expires: &str,
) -> Result<()> {
    let files: Vec<serde_json::Value> = listed
        .iter()
        .map(|(name, bytes)| {
            serde_json::json!({
                "name": name, "size": bytes.len(), "digest": digest(bytes),
                "url": format!("s3://bucket/lt/{}/{task}/uid/{name}", ns.name),
            })
        })
        .collect();
    let total: usize = listed.iter().map(|(_, b)| b.len()).sum();
    let status = serde_json::json!({"status": {"outputs": {
        "store": "default",
        "location": format!("s3://bucket/lt/{}/{task}/uid/", ns.name),
        "count": listed.len(), "totalBytes": total, "size": crds::outputs::human_size(total as u64),
        "files": files, "downloadSecret": format!("{task}-outputs"),
    }}});
    ns.k(&[
        "patch",
        "task",
        task,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ])?;
    let urls: serde_json::Map<String, serde_json::Value> = listed
        .iter()
        .map(|(name, _)| (name.to_string(), link(name).into()))
        .collect();
    let grant = serde_json::json!({"expires": expires, "urls": urls});
    let secret = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("{task}-outputs")},
        "stringData": {"download.json": grant.to_string()},
    });
    ns.apply(&secret.to_string())?;
    Ok(())
}
