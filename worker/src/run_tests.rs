use super::*;

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
    let o = run(&prog(&["sh", "-c", "echo hello; exit 3"]), &[], 4096).await;
    assert_eq!(o.exit_code, 3);
    assert_eq!(o.stdout_tail, b"hello\n");
    assert!(o.message.contains("code 3"));
}

#[tokio::test]
async fn env_reaches_the_program() {
    let env = vec![("LONGTASK_RESULT".to_owned(), "/x/y".to_owned())];
    let o = run(
        &prog(&["sh", "-c", "printf %s \"$LONGTASK_RESULT\""]),
        &env,
        4096,
    )
    .await;
    assert_eq!(
        (o.exit_code, o.stdout_tail.as_slice()),
        (0, b"/x/y".as_slice())
    );
}

#[tokio::test]
async fn missing_program_is_127() {
    let o = run(&prog(&["/nonexistent/program"]), &[], 4096).await;
    assert_eq!(o.exit_code, 127);
    assert!(o.message.contains("not found"));
}

#[tokio::test]
async fn killed_by_signal() {
    let o = run(&prog(&["sh", "-c", "kill -9 $$"]), &[], 4096).await;
    assert_eq!(o.exit_code, 137);
    assert!(o.message.contains("SIGKILL"), "{}", o.message);
}
