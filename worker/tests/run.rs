//! Running a program: exit codes, the tails kept, the environment passed.

use longtask_worker::chain;
use longtask_worker::run::{RunError, Tail, last_lines, run};

fn prog(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn tail_keeps_the_last_bytes() {
    let mut t = Tail::new(4);
    t.push(b"ab");
    t.push(b"cdef");
    assert_eq!(t.bytes(), b"cdef");
    t.push(b"0123456789");
    assert_eq!(t.bytes(), b"6789");
}

#[tokio::test]
async fn exit_codes_and_tail() {
    let o = run(
        &prog(&["sh", "-c", "echo hello; exit 3"]),
        &[],
        4096,
        64,
        8192,
    )
    .await;
    assert_eq!(o.exit_code(), 3);
    assert_eq!(o.stdout_tail, b"hello\n");
    assert!(o.message().contains("code 3"));
}

#[tokio::test]
async fn env_reaches_the_program() {
    let env = vec![("LONGTASK_RESULT".to_owned(), "/x/y".to_owned())];
    let o = run(
        &prog(&["sh", "-c", "printf %s \"$LONGTASK_RESULT\""]),
        &env,
        4096,
        64,
        8192,
    )
    .await;
    assert_eq!(
        (o.exit_code(), o.stdout_tail.as_slice()),
        (0, b"/x/y".as_slice())
    );
}

#[tokio::test]
async fn missing_program_is_127() {
    let o = run(&prog(&["/nonexistent/program"]), &[], 4096, 64, 8192).await;
    assert_eq!(o.exit_code(), 127);
    assert!(o.message().contains("not found"));
}

#[tokio::test]
async fn killed_by_signal() {
    let o = run(&prog(&["sh", "-c", "kill -9 $$"]), &[], 4096, 64, 8192).await;
    assert_eq!(o.exit_code(), 137);
    assert!(o.message().contains("SIGKILL"), "{}", o.message());
}

#[tokio::test]
async fn log_tail_has_both_streams_last_lines() {
    // The streams are separate pipes: only output apart in time keeps its order.
    let script =
        "for i in $(seq 1 100); do echo out$i; done; sleep 0.3; echo err1 >&2; echo err2 >&2";
    let o = run(&prog(&["sh", "-c", script]), &[], 4096, 64, 8192).await;
    let lines: Vec<&str> = o.log_tail.lines().collect();
    assert_eq!(lines.len(), 64, "{}", o.log_tail);
    assert_eq!(lines[62..], ["err1", "err2"]);
    assert_eq!(lines[61], "out100");
    assert!(!lines.contains(&"out38"));
}

#[test]
fn last_lines_drops_a_cut_first_line() {
    assert_eq!(last_lines(b"a\nb\nc", 2, false), "b\nc");
    assert_eq!(last_lines(b"rtial\nb\n", 10, true), "b\n");
    assert_eq!(last_lines(b"only", 10, true), "only");
    assert_eq!(last_lines(b"", 3, false), "");
}

#[test]
fn failures_map_to_shell_exit_codes() {
    let io = || std::io::Error::other("os says no");
    let p = || "prog".to_owned();
    let cases = [
        (RunError::NoProgram, 2, "no program given"),
        (
            RunError::NotFound {
                program: p(),
                source: io(),
            },
            127,
            "program not found: prog: os says no",
        ),
        (
            RunError::NotExecutable {
                program: p(),
                source: io(),
            },
            126,
            "cannot execute prog: os says no",
        ),
        (
            RunError::Start {
                program: p(),
                source: io(),
            },
            126,
            "cannot start prog: os says no",
        ),
        (
            RunError::Wait {
                program: p(),
                source: io(),
            },
            1,
            "cannot wait for the program prog: os says no",
        ),
        (
            RunError::Exited { code: 3 },
            3,
            "the program exited with code 3",
        ),
        (
            RunError::Killed {
                signal: "SIGKILL",
                number: 9,
            },
            137,
            "the program was killed by signal SIGKILL (9)",
        ),
        (
            RunError::NoExitCode,
            1,
            "the program ended without an exit code",
        ),
    ];
    for (e, code, text) in cases {
        assert_eq!((e.exit_code(), chain(&e)), (code, text.to_owned()));
    }
}

#[tokio::test]
async fn no_program_is_2_and_success_says_nothing() {
    let o = run(&[], &[], 4096, 64, 8192).await;
    assert_eq!(
        (o.exit_code(), o.message()),
        (2, "no program given".to_owned())
    );
    let o = run(&prog(&["true"]), &[], 4096, 64, 8192).await;
    assert_eq!((o.exit_code(), o.message()), (0, String::new()));
}
