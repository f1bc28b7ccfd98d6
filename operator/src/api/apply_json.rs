//! The body of a server-side apply, as JSON the API server can read. It
//! reads an apply patch as YAML, and YAML refuses some characters written
//! raw (DEL, the C1 controls U+0080..U+009F, U+FFFE, U+FFFF) that
//! serde_json leaves raw inside strings: a status holding a program's
//! result, progress or log line with one was refused with 400 ("control
//! characters are not allowed") on every try, and the Task never ended.
//! Written as `\u` escapes they are plain ASCII, and the same string to
//! any JSON reader.

use serde_json::value::RawValue;

/// `body` as JSON text with every character YAML refuses raw escaped.
pub fn apply_json(body: &serde_json::Value) -> Result<Box<RawValue>, serde_json::Error> {
    let text = body.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if yaml_printable(c) {
            out.push(c);
        } else {
            // Outside strings JSON holds only ASCII punctuation, digits and
            // letters, so every such character is inside a string.
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        }
    }
    RawValue::from_string(out)
}

/// Whether YAML (the API server's reader) accepts `c` written as it is.
fn yaml_printable(c: char) -> bool {
    matches!(u32::from(c),
        0x09 | 0x0A | 0x0D | 0x20..=0x7E | 0x85 | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refused_characters_are_escaped_and_read_back_the_same() {
        let text: String = (0u32..0x300)
            .chain([0xFFFE, 0xFFFF, 0xFEFF, 0x1F600])
            .filter_map(char::from_u32)
            .collect();
        let body =
            json!({"status": {"result": text, "logTail": "a\u{1b}]52;c;x\u{7}\u{9b}2J\u{7f}"}});
        let raw = apply_json(&body).expect("json");
        assert!(
            raw.get().chars().all(yaml_printable),
            "a raw character YAML refuses is left"
        );
        let back: serde_json::Value = serde_json::from_str(raw.get()).expect("valid JSON");
        assert_eq!(back, body);
        assert!(raw.get().contains("\\u009b") && raw.get().contains("\\u007f"));
    }

    #[test]
    fn plain_bodies_are_unchanged() {
        let body = json!({"status": {"message": "all 3 shards succeeded", "é": "✓"}});
        assert_eq!(apply_json(&body).expect("json").get(), body.to_string());
    }
}
