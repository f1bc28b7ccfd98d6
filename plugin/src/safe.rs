//! Text from the cluster made safe for a terminal. A program's result, its
//! progress and log lines, status messages and Event messages are written
//! by whoever ran or touched a Task; printed as they are, an ESC or C1
//! byte starts a sequence the terminal obeys (set the title, write the
//! clipboard, clear or hide the screen). Every verb prints such text
//! through [`visible`], which shows each control character as text, the
//! way `kubectl describe` shows an ESC as `^[`.

use std::borrow::Cow;
use std::io::IsTerminal;

/// `s` with every control character a terminal would act on replaced by a
/// visible stand-in; newline and tab stay. C0 controls and DEL in caret
/// notation (ESC `^[`, BEL `^G`, NUL `^@`, DEL `^?`), carriage return as
/// `\r`, the C1 controls U+0080..U+009F as `\u{80}`..`\u{9f}`, and the
/// bidirectional controls (U+061C, U+200E, U+200F, U+202A..U+202E,
/// U+2066..U+2069) as `\u{202e}` and so on: those reorder what follows on
/// the line, so a name or message can show text in another order than it
/// holds ("Trojan Source", CVE-2021-42574). Nothing else changes, and the result holds no control character but
/// newline and tab, so a second pass changes nothing.
pub fn visible(s: &str) -> Cow<'_, str> {
    if !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if !unsafe_char(c) => out.push(c),
            '\u{7f}' => out.push_str("^?"),
            c if u32::from(c) < 0x20 => {
                out.push('^');
                out.push(char::from(b'@' + c as u8));
            }
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    Cow::Owned(out)
}

/// True for the characters [`visible`] replaces.
fn unsafe_char(c: char) -> bool {
    let n = u32::from(c);
    (n < 0x20 && c != '\n' && c != '\t') || (0x7f..=0x9f).contains(&n) || bidi_control(n)
}

/// True for a Unicode bidirectional formatting character ([`bidi_control`]).
pub fn is_bidi_control(c: char) -> bool {
    bidi_control(u32::from(c))
}

/// The Unicode bidirectional formatting characters (UAX #9): marks,
/// embeddings, overrides and isolates.
fn bidi_control(n: u32) -> bool {
    matches!(n, 0x061c | 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069)
}

/// Bytes that may not be UTF-8 (a result, a log line) made visible: the
/// UTF-8 parts as [`visible`] makes them, any other byte as `\xNN`.
pub fn visible_bytes(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        out.extend_from_slice(visible(chunk.valid()).as_bytes());
        for byte in chunk.invalid() {
            out.extend_from_slice(format!("\\x{byte:02x}").as_bytes());
        }
    }
    out
}

/// What a program's own bytes (a result, a log) become on stdout: exact
/// when stdout is a pipe or a file, made visible when it is a terminal.
pub fn for_stdout(b: &[u8]) -> Cow<'_, [u8]> {
    if std::io::stdout().is_terminal() {
        Cow::Owned(visible_bytes(b))
    } else {
        Cow::Borrowed(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let s = "done 42% — naïve ✓\n\tnext";
        assert!(matches!(visible(s), Cow::Borrowed(t) if t == s));
    }

    #[test]
    fn controls_become_visible() {
        for (raw, want) in [
            ("\u{1b}]52;c;ZXZpbA==\u{7}", "^[]52;c;ZXZpbA==^G"),
            ("\u{1b}]0;title\u{1b}\\", "^[]0;title^[\\"),
            ("\u{1b}[2J\u{1b}[8mhidden", "^[[2J^[[8mhidden"),
            ("a\u{0}b\u{8}c\u{7f}", "a^@b^Hc^?"),
            ("over\rwrite", "over\\rwrite"),
            (
                "csi\u{9b}2J osc\u{9d}0;t\u{9c}",
                "csi\\u{9b}2J osc\\u{9d}0;t\\u{9c}",
            ),
            ("\u{80}\u{9f}\u{a0}", "\\u{80}\\u{9f}\u{a0}"),
            ("keep\nlines\tand tabs", "keep\nlines\tand tabs"),
            (
                "ok\u{202e}txt.exe\u{2066}x\u{2069}\u{200f}",
                "ok\\u{202e}txt.exe\\u{2066}x\\u{2069}\\u{200f}",
            ),
            ("\u{202f}\u{2065}\u{206a}", "\u{202f}\u{2065}\u{206a}"),
        ] {
            assert_eq!(visible(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn no_control_survives_and_a_second_pass_changes_nothing() {
        let all: String = (0u32..0x2100).filter_map(char::from_u32).collect();
        let once = visible(&all).into_owned();
        assert!(
            !once.chars().any(unsafe_char),
            "a control character left in {once:?}"
        );
        assert_eq!(visible(&once), once);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_as_hex() {
        assert_eq!(
            visible_bytes(b"ok\x1b[31m\x9b\xffend\n"),
            b"ok^[[31m\\x9b\\xffend\n"
        );
    }
}
