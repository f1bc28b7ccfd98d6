use super::*;

fn result(raw: Vec<u8>) -> TaskResult {
    TaskResult {
        result_size: raw.len(),
        result: raw,
        exit_code: 3,
        finished_at: "2024-01-01T00:00:00Z".into(),
        message: "exit 3".into(),
        log_tail: "a\nb\n".into(),
        omitted: false,
    }
}

fn back(r: &TaskResult) -> Result<TaskResult, FormatError> {
    let s = r.to_stored();
    TaskResult::from_stored(&s.data, &s.binary_data)
}

fn encoding(r: &TaskResult) -> String {
    r.to_stored().data[keys::RESULT_ENCODING].clone()
}

/// Compressible but not trivially so: decimal counting.
fn counting(len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0u64..)
        .flat_map(|i| format!("{i} ").into_bytes())
        .take(len)
        .collect();
    v.truncate(len);
    v
}

/// Incompressible: a xorshift stream.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn round_trip() {
    let r = result(b"42\n".to_vec());
    assert_eq!(encoding(&r), encodings::PLAIN);
    assert_eq!(back(&r), Ok(r));
}

#[test]
fn plain_up_to_the_threshold_then_gzip() {
    for (len, want) in [
        (0, encodings::PLAIN),
        (MAX_STATUS_RESULT_BYTES, encodings::PLAIN),
        (MAX_STATUS_RESULT_BYTES + 1, encodings::PLAIN),
        (MAX_PLAIN_RESULT_BYTES, encodings::PLAIN),
        (MAX_PLAIN_RESULT_BYTES + 1, encodings::GZIP),
        (1_000_000, encodings::GZIP),
        (MAX_RESULT_BYTES, encodings::GZIP),
    ] {
        let r = result(counting(len));
        assert_eq!(encoding(&r), want, "{len} bytes");
        assert_eq!(back(&r), Ok(r), "{len} bytes");
    }
}

#[test]
fn a_gzip_result_fits_the_config_map() {
    let r = result(counting(MAX_RESULT_BYTES));
    let s = r.to_stored();
    let values: usize = s.data.values().map(String::len).sum::<usize>()
        + s.binary_data.values().map(|b| b.0.len()).sum::<usize>();
    assert!(values < MAX_STORED_RESULT_BYTES, "{values}");
}

#[test]
fn over_the_limit_is_omitted_naming_size_and_limit() {
    let r = result(counting(MAX_RESULT_BYTES + 1));
    assert!(r.too_large());
    let s = r.to_stored();
    assert!(!s.data.contains_key(keys::RESULT) && s.binary_data.is_empty());
    let b = back(&r).unwrap();
    assert!(b.too_large() && b.result.is_empty());
    assert_eq!(b.result_size, MAX_RESULT_BYTES + 1);
    let m = b.too_large_message();
    assert!(m.contains("1048577") && m.contains("1048576"), "{m}");
}

#[test]
fn incompressible_under_the_limit_is_omitted_with_a_note() {
    let r = result(noise(MAX_RESULT_BYTES));
    assert!(!r.too_large());
    assert!(matches!(encode(&r.result), Encoded::TooLarge(n) if n > MAX_STORED_RESULT_BYTES));
    let b = back(&r).unwrap();
    assert!(b.omitted && b.too_large() && b.result.is_empty());
    assert!(
        b.message.starts_with("exit 3; the result is 1048576 bytes"),
        "{}",
        b.message
    );
    let m = b.too_large_message();
    assert!(m.contains("1048576") && m.contains("compress"), "{m}");
    // Small noise compresses badly too, but fits.
    let r = result(noise(64 * 1024));
    assert_eq!(encoding(&r), encodings::GZIP);
    assert_eq!(back(&r), Ok(r));
}

#[test]
fn invalid_utf8_is_stored_gzip_and_read_back_whole() {
    let r = result(vec![b'o', b'k', 0xFF, 0xFE, 0]);
    assert!(!r.is_text());
    assert_eq!(r.text(), "ok\u{FFFD}\u{FFFD}\0");
    assert_eq!(encoding(&r), encodings::GZIP);
    assert_eq!(back(&r), Ok(r));
}

#[test]
fn gzip_bombs_are_refused() {
    // 8 MiB of zeros compress to about 8 KiB.
    let bomb = gzip(&vec![0u8; 8 * MAX_RESULT_BYTES]);
    assert!(bomb.len() < 64 * 1024);
    let err = gunzip(&bomb, MAX_RESULT_BYTES).unwrap_err();
    assert!(err.contains("more than 1048576"), "{err}");
    let data = BTreeMap::from([
        (keys::EXIT_CODE.to_owned(), "0".to_owned()),
        (keys::RESULT_ENCODING.to_owned(), encodings::GZIP.to_owned()),
    ]);
    let bin = BTreeMap::from([(keys::RESULT_GZIP.to_owned(), ByteString(bomb))]);
    assert!(matches!(
        TaskResult::from_stored(&data, &bin),
        Err(FormatError::BadValue(keys::RESULT_GZIP, _))
    ));
    // Exactly at the limit inflates.
    let at = gzip(&vec![0u8; MAX_RESULT_BYTES]);
    assert_eq!(
        gunzip(&at, MAX_RESULT_BYTES).map(|v| v.len()),
        Ok(MAX_RESULT_BYTES)
    );
}

#[test]
fn corrupt_or_missing_gzip_is_a_format_error() {
    let r = result(counting(MAX_PLAIN_RESULT_BYTES + 10));
    let mut s = r.to_stored();
    let gz = &mut s.binary_data.get_mut(keys::RESULT_GZIP).unwrap().0;
    let n = gz.len();
    gz[n - 6] ^= 0xFF; // inside the CRC32
    assert!(matches!(
        TaskResult::from_stored(&s.data, &s.binary_data),
        Err(FormatError::BadValue(keys::RESULT_GZIP, _))
    ));
    let mut s = r.to_stored();
    s.data.insert(keys::RESULT_SIZE.into(), "7".into());
    let e = TaskResult::from_stored(&s.data, &s.binary_data).unwrap_err();
    assert!(e.to_string().contains("not the resultSize 7"), "{e}");
    assert_eq!(
        TaskResult::from_data(&s.data),
        Err(FormatError::MissingKey(keys::RESULT_GZIP))
    );
    s.data.insert(keys::RESULT_ENCODING.into(), "zstd".into());
    assert!(matches!(
        TaskResult::from_data(&s.data),
        Err(FormatError::BadValue(keys::RESULT_ENCODING, _))
    ));
}

#[test]
fn data_without_an_encoding_is_plain() {
    let d = BTreeMap::from([
        (keys::EXIT_CODE.to_owned(), "0".to_owned()),
        (keys::RESULT.to_owned(), "hi".to_owned()),
    ]);
    let r = TaskResult::from_data(&d).unwrap();
    assert_eq!(
        (r.result.as_slice(), r.result_size, r.omitted),
        (&b"hi"[..], 2, false)
    );
}

#[test]
fn bad_and_missing_exit_code() {
    let mut d = BTreeMap::new();
    assert_eq!(
        TaskResult::from_data(&d),
        Err(FormatError::MissingKey(keys::EXIT_CODE))
    );
    d.insert(keys::EXIT_CODE.into(), "x".into());
    assert!(matches!(
        TaskResult::from_data(&d),
        Err(FormatError::BadValue(..))
    ));
}

#[test]
fn truncation_respects_char_boundaries() {
    assert_eq!(truncate_utf8("héllo", 2), "h");
    assert_eq!(truncate_utf8("héllo", 3), "hé");
    assert_eq!(truncate_utf8("abc", 10), "abc");
}

#[test]
fn a_plain_result_must_match_its_size() {
    let mut data = BTreeMap::from([
        (keys::EXIT_CODE.to_owned(), "0".to_owned()),
        (keys::RESULT.to_owned(), "FORGED".to_owned()),
        (keys::RESULT_SIZE.to_owned(), "2".to_owned()),
    ]);
    assert!(matches!(
        TaskResult::from_data(&data),
        Err(FormatError::BadValue(keys::RESULT_SIZE, _))
    ));
    data.insert(keys::RESULT_SIZE.to_owned(), "6".to_owned());
    assert_eq!(TaskResult::from_data(&data).map(|r| r.result_size), Ok(6));
}
