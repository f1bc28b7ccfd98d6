//! longtask-store against a real S3 store: SeaweedFS (`weed server`, from
//! tools/seaweedfs/install) started by each test on loopback ports of its
//! own. Skipped, saying so, when weed is not installed; tests/run installs
//! it first, so in CI these run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crds::Reason;
use crds::outputs::UploadGrant;
use jiff::{Timestamp, ToSpan as _};
use longtask_e2e::seaweed::Seaweed;
use longtask_store::{
    Bucket, Credentials, DownloadError, UploadError, UploadOptions, download, presign_get,
    upload_file, upload_grant,
};

/// A store in a fresh directory, or `None` (test skipped) without weed.
async fn store(test: &str) -> Option<(Seaweed, tempdir::Dir)> {
    if !Seaweed::installed() {
        // A failure, not a skip: a missing store must not pass as green.
        panic!(
            "{test}: {} is not installed (run tools/seaweedfs/install)",
            Seaweed::weed().display()
        );
    }
    longtask_store::install_crypto_provider();
    let dir = tempdir::Dir::new(test);
    let store = Seaweed::start(&dir.0.join("seaweed"))
        .await
        .expect("seaweedfs starts");
    Some((store, dir))
}

mod tempdir {
    use std::path::PathBuf;

    /// A directory under target/ removed on drop.
    pub struct Dir(pub PathBuf);

    impl Dir {
        pub fn new(name: &str) -> Dir {
            let path = longtask_e2e::root()
                .join("target/store-tests")
                .join(format!("{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).expect("test directory");
            Dir(path)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn grant(bucket: &Bucket, creds: &Credentials, prefix: &str, max: u64) -> UploadGrant {
    let now = Timestamp::now();
    upload_grant(bucket, creds, prefix, max, 100, now, now + 1.hour())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write test file");
    path
}

fn http() -> reqwest::Client {
    longtask_store::upload_client(Duration::from_secs(10)).expect("http client")
}

fn quick() -> UploadOptions {
    UploadOptions {
        attempts: 3,
        first_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(200),
        request_timeout: Duration::from_secs(10),
        ..UploadOptions::default()
    }
}

fn sha256(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Bytes that are not all the same, so a misplaced chunk shows.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[tokio::test]
async fn a_grant_writes_under_its_prefix_only() {
    let Some((store, dir)) = store("tenancy").await else {
        return;
    };
    let a = "lt/team-a/train/uid-a/";
    let g = grant(&store.bucket(), &store.admin(), a, 1 << 20);
    let bytes = pattern(300_000);
    let file = write(&dir.0, "model.bin", &bytes);

    let up = upload_file(&http(), &g, &format!("{a}model.bin"), &file, &quick())
        .await
        .expect("upload under the grant's prefix");
    assert_eq!(
        (up.size, up.sha256.as_str()),
        (300_000, sha256(&bytes).as_str())
    );
    let stored = store.client().get(&format!("{a}model.bin")).await.unwrap();
    assert_eq!(stored.as_ref(), bytes.as_slice());

    // Another Task's prefix, in another namespace: the store refuses.
    for other in [
        "lt/team-b/train/uid-b/model.bin",
        "lt/team-a/train/uid-x/model.bin",
        "model.bin",
    ] {
        let err = upload_file(&http(), &g, other, &file, &quick())
            .await
            .expect_err("a key outside the prefix is refused");
        assert_eq!(err.reason(), Reason::OutputAccessDenied, "{other}: {err:?}");
    }
    assert!(
        store
            .client()
            .list("lt/team-b/", None)
            .await
            .unwrap()
            .objects
            .is_empty()
    );

    // Overwriting another Task's object is the same refusal: B's object stays.
    store
        .client()
        .put("lt/team-b/t/u/x", "b's".into())
        .await
        .unwrap();
    let err = upload_file(&http(), &g, "lt/team-b/t/u/x", &file, &quick())
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Reason::OutputAccessDenied);
    assert_eq!(
        store
            .client()
            .get("lt/team-b/t/u/x")
            .await
            .unwrap()
            .as_ref(),
        b"b's"
    );
}

#[tokio::test]
async fn a_grant_reads_nothing() {
    let Some((store, dir)) = store("reads").await else {
        return;
    };
    let a = "lt/team-a/train/uid-a/";
    let g = grant(&store.bucket(), &store.admin(), a, 1 << 20);
    let file = write(&dir.0, "model.bin", b"weights");
    upload_file(&http(), &g, &format!("{a}model.bin"), &file, &quick())
        .await
        .expect("upload");
    store
        .client()
        .put("lt/team-b/t/u/x", "b's".into())
        .await
        .unwrap();
    // The grant is no right to read: its holder has only the form fields,
    // and a plain GET (or listing) without a signature is refused.
    let bucket = store.bucket();
    for url in [
        bucket.object_url(&format!("{a}model.bin")),
        bucket.object_url("lt/team-b/t/u/x"),
        format!("{}?list-type=2", bucket.bucket_url()),
    ] {
        let status = http().get(&url).send().await.unwrap().status();
        assert_eq!(status.as_u16(), 403, "{url}");
    }
}

#[tokio::test]
async fn presigned_download_is_byte_exact_and_checked() {
    let Some((store, dir)) = store("download").await else {
        return;
    };
    let key = "lt/ns/t/u/data.bin";
    let bytes = pattern(1_000_003);
    store.client().put(key, bytes.clone().into()).await.unwrap();
    let url = presign_get(
        &store.bucket(),
        &store.admin(),
        key,
        Timestamp::now(),
        Duration::from_secs(600),
    );
    let digest = sha256(&bytes);

    let dest = dir.0.join("out.bin");
    let mut seen = 0;
    download(
        &longtask_store::http_client(Duration::from_secs(10)).unwrap(),
        &url,
        &dest,
        bytes.len() as u64,
        &format!("sha256:{digest}"),
        &mut |n| seen = n,
    )
    .await
    .expect("download");
    assert_eq!(std::fs::read(&dest).unwrap(), bytes);
    assert_eq!(seen, bytes.len() as u64);

    // A size or a digest other than recorded: refused, nothing left behind.
    let bad = dir.0.join("bad.bin");
    let err = download(&http(), &url, &bad, 1_000_000, &digest, &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, DownloadError::Size { .. }), "{err:?}");
    let wrong = sha256(b"something else");
    let err = download(&http(), &url, &bad, bytes.len() as u64, &wrong, &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, DownloadError::Digest { .. }), "{err:?}");
    assert!(!bad.exists() && !dir.0.join("bad.bin.part").exists());

    // A URL whose signature was tampered with is refused by the store.
    let forged = url.replace(key, "lt/ns/t/u/other.bin");
    let err = download(&http(), &forged, &bad, 1, &digest, &mut |_| {})
        .await
        .unwrap_err();
    assert!(matches!(err, DownloadError::Request { .. }), "{err:?}");
}

#[tokio::test]
async fn list_pages_and_delete_a_prefix() {
    let Some((store, _dir)) = store("list").await else {
        return;
    };
    let client = store.client();
    // More than one page (1000 keys) and more than one delete batch.
    let keys: Vec<String> = (0..1105).map(|i| format!("lt/ns/t/u/f{i:04}")).collect();
    let puts = keys
        .iter()
        .map(|k| client.put(k, bytes::Bytes::from_static(b"x")));
    for r in futures::future::join_all(puts).await {
        r.unwrap();
    }
    for k in ["lt/ns/t/u/sub/a", "lt/ns/t/u/sub/b", "lt/ns/other/u/keep"] {
        client
            .put(k, bytes::Bytes::from_static(b"yy"))
            .await
            .unwrap();
    }

    let all = client.list("lt/ns/t/u/", None).await.unwrap();
    assert_eq!(all.objects.len(), 1107);
    assert_eq!(all.objects[0].key, "lt/ns/t/u/f0000");
    assert_eq!(all.objects[0].size, 1);
    let top = client.list("lt/ns/t/u/", Some('/')).await.unwrap();
    assert_eq!(top.objects.len(), 1105);
    assert_eq!(top.prefixes, vec!["lt/ns/t/u/sub/".to_string()]);

    assert_eq!(client.delete_prefix("lt/ns/t/").await.unwrap(), 1107);
    assert!(
        client
            .list("lt/ns/t/", None)
            .await
            .unwrap()
            .objects
            .is_empty()
    );
    let kept = client.list("lt/ns/", None).await.unwrap();
    assert_eq!(kept.objects.len(), 1);
    assert_eq!(kept.objects[0].key, "lt/ns/other/u/keep");
    assert!(
        client.delete_prefix("").await.is_err(),
        "an empty prefix is refused"
    );
}

#[tokio::test]
async fn wrong_keys_and_expired_grants_are_access_denied() {
    let Some((store, dir)) = store("denied").await else {
        return;
    };
    let file = write(&dir.0, "f", &pattern(5000));
    let (prefix, key) = ("lt/ns/t/u/", "lt/ns/t/u/f");
    let wrong = Credentials {
        secret_access_key: "not-the-secret".into(),
        ..store.admin()
    };
    let g = grant(&store.bucket(), &wrong, prefix, 1 << 20);
    let err = upload_file(&http(), &g, key, &file, &quick())
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Reason::OutputAccessDenied, "{err:?}");
    let admin = longtask_store::Client::new(store.bucket(), wrong, Duration::from_secs(5)).unwrap();
    let err = admin.list(prefix, None).await.unwrap_err();
    assert_eq!(err.reason(), Reason::OutputAccessDenied, "{err:?}");

    let now = Timestamp::now();
    let old = upload_grant(
        &store.bucket(),
        &store.admin(),
        prefix,
        1 << 20,
        1,
        now - 2.hours(),
        now - 1.hour(),
    );
    let err = upload_file(&http(), &old, key, &file, &quick())
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Reason::OutputAccessDenied, "{err:?}");
    assert!(
        store
            .client()
            .list(prefix, None)
            .await
            .unwrap()
            .objects
            .is_empty()
    );
}

#[tokio::test]
async fn a_missing_bucket_is_bucket_missing() {
    let Some((store, dir)) = store("missing").await else {
        return;
    };
    let file = write(&dir.0, "f", &pattern(5000));
    let missing = store.bucket_named("no-such-bucket");
    let g = grant(&missing, &store.admin(), "lt/ns/t/u/", 1 << 20);
    let err = upload_file(&http(), &g, "lt/ns/t/u/f", &file, &quick())
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Reason::OutputBucketMissing, "{err:?}");
    let admin =
        longtask_store::Client::new(missing, store.admin(), Duration::from_secs(5)).unwrap();
    let err = admin.head_bucket().await.unwrap_err();
    assert_eq!(err.reason(), Reason::OutputBucketMissing, "{err:?}");
    store
        .client()
        .head_bucket()
        .await
        .expect("the real bucket exists");
}

#[tokio::test]
async fn a_file_over_the_limit_is_quota_exceeded() {
    let Some((store, dir)) = store("quota").await else {
        return;
    };
    let file = write(&dir.0, "f", &pattern(5000));
    let (prefix, key) = ("lt/ns/t/u/", "lt/ns/t/u/f");
    // Refused before anything is sent ...
    let small = grant(&store.bucket(), &store.admin(), prefix, 4999);
    let err = upload_file(&http(), &small, key, &file, &quick())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            UploadError::TooLarge {
                size: 5000,
                max: 4999,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.reason(), Reason::OutputQuotaExceeded);
    // ... and by the store, whose policy says so, if the worker were lied to.
    let mut lied = small.clone();
    lied.max_file_bytes = 1 << 20;
    let err = upload_file(&http(), &lied, key, &file, &quick())
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Reason::OutputQuotaExceeded, "{err:?}");
    assert!(
        store
            .client()
            .list(prefix, None)
            .await
            .unwrap()
            .objects
            .is_empty()
    );
}

#[tokio::test]
async fn a_stopped_store_is_unreachable_after_bounded_retries_then_back() {
    let Some((mut store, dir)) = store("stopped").await else {
        return;
    };
    let file = write(&dir.0, "f", &pattern(1000));
    let g = grant(&store.bucket(), &store.admin(), "lt/ns/t/u/", 1 << 20);
    store.stop();
    let started = Instant::now();
    let err = upload_file(&http(), &g, "lt/ns/t/u/f", &file, &quick())
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Reason::OutputStoreUnreachable, "{err:?}");
    assert!(
        matches!(err, UploadError::Store { attempts: 3, .. }),
        "{err:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    store.restart().await.expect("the store comes back");
    upload_file(&http(), &g, "lt/ns/t/u/f", &file, &quick())
        .await
        .expect("the same grant works once the store is back");
}

#[tokio::test]
async fn a_file_that_changes_is_not_uploaded() {
    let Some((store, dir)) = store("changed").await else {
        return;
    };
    let g = grant(&store.bucket(), &store.admin(), "lt/ns/t/u/", 1 << 30);

    // A file that keeps growing while it is hashed and sent.
    let path = write(&dir.0, "growing.log", &pattern(4 << 20));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (path, stop) = (path.clone(), stop.clone());
        std::thread::spawn(move || {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                f.write_all(&[b'x'; 4096]).unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let result = upload_file(&http(), &g, "lt/ns/t/u/growing.log", &path, &quick()).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    let err = result.expect_err("a growing file is refused");
    assert_eq!(err.reason(), Reason::OutputChanged, "{err:?}");

    // A file that disappears.
    let err = upload_file(&http(), &g, "lt/ns/t/u/gone", &dir.0.join("gone"), &quick())
        .await
        .unwrap_err();
    assert_eq!(err.reason(), Reason::OutputChanged, "{err:?}");
    assert!(
        store
            .client()
            .list("lt/ns/t/u/", None)
            .await
            .unwrap()
            .objects
            .is_empty(),
        "nothing partial is stored"
    );
}

#[tokio::test]
async fn empty_files_and_odd_names_round_trip() {
    let Some((store, dir)) = store("names").await else {
        return;
    };
    let g = grant(&store.bucket(), &store.admin(), "lt/ns/t/u/", 1 << 20);
    let empty = write(&dir.0, "empty", b"");
    for key in ["lt/ns/t/u/empty", "lt/ns/t/u/plots/a b+c&d=é.png"] {
        let up = upload_file(&http(), &g, key, &empty, &quick())
            .await
            .expect(key);
        assert_eq!(up.size, 0);
        assert_eq!(store.client().get(key).await.unwrap().len(), 0);
    }
    let listed = store.client().list("lt/ns/t/u/", None).await.unwrap();
    let keys: Vec<&str> = listed.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["lt/ns/t/u/empty", "lt/ns/t/u/plots/a b+c&d=é.png"]);
}
