//! Result sizes and encodings as the status shows them: gzip results kept
//! whole (digest of the raw bytes), binary results lossy and flagged,
//! bombs and oversize results refused with a named reason.

use k8s_openapi::api::core::v1::ConfigMap;

use crds::Task;
use crds::conditions::reasons;
use crds::result::{
    MAX_PLAIN_RESULT_BYTES, MAX_RESULT_BYTES, MAX_STATUS_RESULT_BYTES, encodings, gzip, keys,
};
use k8s_openapi::ByteString;

use crate::fixtures::*;
use crate::status::*;

fn status_of(r: &ConfigMap) -> TaskStatus {
    let done = JobFixture::ours().complete().build();
    desired(&Task::test().running(), &obs(Some(&done), Some(r), &[])).status
}

/// Compressible, not constant: decimal counting.
fn counting(len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0u64..)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .take(len)
        .collect();
    v.truncate(len);
    v
}

#[test]
fn gzip_results_are_kept_whole_with_the_digest_of_the_raw_bytes() {
    for len in [MAX_PLAIN_RESULT_BYTES + 1, 1_000_000, MAX_RESULT_BYTES] {
        let raw = counting(len);
        let r = ResultFixture::new(&raw).build();
        assert_eq!(
            r.data.as_ref().map(|d| d[keys::RESULT_ENCODING].as_str()),
            Some(encodings::GZIP)
        );
        let s = status_of(&r);
        assert_eq!(s.reason.as_deref(), Some(reasons::SUCCEEDED), "{len}");
        assert_eq!(
            s.result.as_deref().map(str::as_bytes),
            Some(&raw[..MAX_STATUS_RESULT_BYTES])
        );
        assert_eq!(s.result_truncated, Some(true));
        assert_eq!(s.result_digest, Some(digest(&raw)));
        assert_eq!(s.message.as_deref(), Some("the program succeeded"));
    }
}

#[test]
fn at_the_status_cap_nothing_is_cut() {
    let raw = counting(MAX_STATUS_RESULT_BYTES);
    let s = status_of(&ResultFixture::new(&raw).build());
    assert_eq!(
        s.result.as_ref().map(String::len),
        Some(MAX_STATUS_RESULT_BYTES)
    );
    assert_eq!(s.result_truncated, None);
}

#[test]
fn one_byte_over_the_limit_is_too_large_naming_size_and_limit() {
    let s = status_of(&ResultFixture::new(counting(MAX_RESULT_BYTES + 1)).build());
    assert_eq!(s.reason.as_deref(), Some(reasons::RESULT_TOO_LARGE));
    let m = s.message.unwrap_or_default();
    assert!(m.contains("1048577") && m.contains("1048576"), "{m}");
    assert_eq!((s.result, s.result_digest), (None, None));
}

#[test]
fn binary_results_show_lossily_and_say_so() {
    let raw = [b'o', b'k', 0xFF, b'\n'];
    let s = status_of(&ResultFixture::new(raw).build());
    assert_eq!(s.reason.as_deref(), Some(reasons::SUCCEEDED));
    assert_eq!(s.result.as_deref(), Some("ok\u{FFFD}\n"));
    assert_eq!(s.result_digest, Some(digest(&raw)));
    let m = s.message.unwrap_or_default();
    assert!(m.contains("binary (4 bytes, not UTF-8)"), "{m}");
}

#[test]
fn a_gzip_bomb_is_refused_not_inflated() {
    let mut r = ResultFixture::new("").build();
    if let Some(d) = r.data.as_mut() {
        d.insert(keys::RESULT_ENCODING.into(), encodings::GZIP.into());
        d.remove(keys::RESULT_SIZE);
    }
    let bomb = gzip(&vec![0u8; 16 * MAX_RESULT_BYTES]);
    r.binary_data = Some([(keys::RESULT_GZIP.to_owned(), ByteString(bomb))].into());
    let s = status_of(&r);
    assert_eq!(s.reason.as_deref(), Some(reasons::RESULT_MISSING));
    let m = s.message.unwrap_or_default();
    assert!(m.contains("inflates to more than 1048576 bytes"), "{m}");
}

#[test]
fn an_omitted_result_is_too_large() {
    let s = status_of(&ResultFixture::omitted(MAX_RESULT_BYTES).build());
    assert_eq!(s.reason.as_deref(), Some(reasons::RESULT_TOO_LARGE));
    let m = s.message.unwrap_or_default();
    assert!(m.contains("1048576 bytes") && m.contains("compress"), "{m}");
}
