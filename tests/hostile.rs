//! Issue #25, "a hostile world": inputs built from the project's own samples that once crashed,
//! hung or lost data. Each test failed before its fix.

use std::path::{Path, PathBuf};

use ctxlab::formats;
use ctxlab::model::{Part, Session};

fn sample(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/samples")).join(rel)
}

fn tool_calls(s: &Session) -> Vec<(String, String)> {
    s.messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolCall { id, name, .. } => Some((id.clone(), name.clone())),
            _ => None,
        })
        .collect()
}

/// Finding 1: pi's `firstKeptEntryIndex` of u64::MAX (or 1e20, which saturates) overflowed
/// `i + 1` and indexed out of bounds; it must warn like any index past the entries.
#[test]
fn pi_huge_first_kept_index_warns() {
    let orig = std::fs::read_to_string(sample(
        "pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl",
    ))
    .unwrap();
    assert!(orig.contains("\"firstKeptEntryIndex\":89"));
    let dir = tempfile::tempdir().unwrap();
    for bad in ["18446744073709551615", "1e20", "18446744073709551614"] {
        let p = dir.path().join("s.jsonl");
        std::fs::write(
            &p,
            orig.replace(
                "\"firstKeptEntryIndex\":89",
                &format!("\"firstKeptEntryIndex\":{bad}"),
            ),
        )
        .unwrap();
        let s = formats::load_as(&p, "pi").unwrap_or_else(|e| panic!("{bad}: {e}"));
        assert!(
            s.warnings
                .iter()
                .any(|w| w.line == 97 && w.message.contains("is not an earlier entry")),
            "{bad}: {:?}",
            s.warnings
        );
        assert!(s.compactions.iter().all(|c| c.kept_from.is_none()), "{bad}");
    }
}

/// Finding 2: an Anthropic stream block `index` of u64::MAX panicked and one of 1e9 tried to
/// allocate 72 GB; blocks are now kept by index, so memory follows the events.
#[test]
fn http_capture_huge_anthropic_stream_index() {
    let path = sample("http-capture/anthropic-claude-code.jsonl");
    let orig = std::fs::read_to_string(&path).unwrap();
    let want = tool_calls(&formats::load_as(&path, "http-capture").unwrap());
    assert!(!want.is_empty());
    let dir = tempfile::tempdir().unwrap();
    for big in ["18446744073709551615", "1000000000"] {
        // Every block 1 becomes block `big`: start and deltas alike.
        let text = orig.replace("\\\"index\\\": 1,", &format!("\\\"index\\\": {big},"));
        assert_ne!(text, orig);
        let p = dir.path().join("c.jsonl");
        std::fs::write(&p, text).unwrap();
        let s = formats::load_as(&p, "http-capture").unwrap();
        assert_eq!(tool_calls(&s), want, "index {big}");
    }
}

/// Finding 2: OpenAI streamed `tool_calls[].index` of u64::MAX panicked, 1e9 aborted. The
/// stream is built from the OpenAI sample's first reply.
#[test]
fn http_capture_huge_openai_tool_call_index() {
    let path = sample("http-capture/openai-chat.jsonl");
    let first = std::fs::read_to_string(&path).unwrap();
    let mut x: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    let tc = x["response"]["choices"][0]["message"]["tool_calls"][0].clone();
    assert!(tc["id"].is_string(), "{tc}");
    let dir = tempfile::tempdir().unwrap();
    for big in [u64::MAX, 1_000_000_000, 0] {
        let chunk = |delta: serde_json::Value| {
            format!(
                "data: {}",
                serde_json::json!({"model": "gpt-4.1", "choices": [{"index": 0, "delta": delta}]})
            )
        };
        let lines = vec![
            chunk(serde_json::json!({"role": "assistant"})),
            chunk(
                serde_json::json!({"tool_calls": [{"index": big, "id": tc["id"],
                "function": {"name": tc["function"]["name"], "arguments": ""}}]}),
            ),
            chunk(serde_json::json!({"tool_calls": [{"index": big,
                "function": {"arguments": tc["function"]["arguments"]}}]})),
            "data: [DONE]".to_string(),
        ];
        x["response"] = serde_json::json!({"stream": true, "sse_lines": lines});
        let p = dir.path().join("o.jsonl");
        std::fs::write(&p, format!("{x}\n")).unwrap();
        let s = formats::load_as(&p, "http-capture").unwrap();
        let calls = tool_calls(&s);
        assert_eq!(
            calls,
            vec![(
                tc["id"].as_str().unwrap().to_string(),
                tc["function"]["name"].as_str().unwrap().to_string()
            )],
            "index {big}"
        );
    }
}

/// Finding 6: a stdout write error panicked ("failed printing to stdout"). A closed pipe ends
/// the command quietly; a full device is a one-line error and exit 1.
#[test]
fn stdout_errors_do_not_panic() {
    use std::process::{Command, Stdio};
    let log = sample("pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("inspect")
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the first line is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.is_empty(), "a closed pipe is not an error: {err}");
    assert!(out.status.success(), "{:?} {err}", out.status);

    if Path::new("/dev/full").exists() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_ctxlab"))
            .arg("inspect")
            .arg(&log)
            .stdout(full)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.starts_with("ctxlab: cannot write to standard output:") && err.contains("space"),
            "{err}"
        );
    }
}

/// Findings 8 and 9: symlink loops in a folder (`l -> .`, `up -> ..`, two links to each other)
/// repeated logs or never ended; a FIFO named like a log blocked the load forever. Each real
/// file is now read once and only regular files are logs.
#[cfg(unix)]
#[test]
fn folder_walk_survives_symlink_loops_and_fifos() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    let d = root.path().join("logs");
    std::fs::create_dir(&d).unwrap();
    let log = sample("pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl");
    std::fs::copy(&log, d.join("s.jsonl")).unwrap();
    symlink(".", d.join("l")).unwrap();
    symlink("..", d.join("up")).unwrap();
    symlink("b", d.join("a")).unwrap();
    symlink("a", d.join("b")).unwrap();
    symlink("s.jsonl", d.join("t.jsonl")).unwrap();
    symlink("missing.jsonl", d.join("dangling.jsonl")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(d.join("p.jsonl"))
        .status()
        .unwrap();
    assert!(status.success());
    // A hang must fail the test, not stall it: load on a thread with a deadline.
    let (tx, rx) = std::sync::mpsc::channel();
    let dd = d.clone();
    std::thread::spawn(move || {
        let _ = tx.send(formats::load(&dd).map(|s| s.len()));
    });
    let n = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("loading the folder hung")
        .unwrap();
    assert_eq!(n, 1, "the one log is loaded once");
}

/// The example plugin as the workspace built it (`cargo build --workspace` first).
fn example_plugin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = ctxlab::plugin_host::checkout_dir(&exe).expect("inside a cargo target folder");
    let p = dir.join(format!(
        "{}ctxlab_plugin_example{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        p.is_file(),
        "{} missing: run cargo build --workspace",
        p.display()
    );
    p
}

/// Finding 3: a truncated plugin library crashed discovery with SIGBUS (dlopen maps pages past
/// the end of the file). It is refused, naming the file and why, and the real one still loads.
#[cfg(target_os = "linux")]
#[test]
fn a_truncated_plugin_library_is_refused_not_a_crash() {
    let real = example_plugin();
    let bytes = std::fs::read(&real).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for cut in [100_000, 64, 20, bytes.len() - 1] {
        let p = dir.path().join(format!("libctxlab_plugin_t{cut}.so"));
        std::fs::write(&p, &bytes[..cut.min(bytes.len())]).unwrap();
        let mut reg = ctxlab::plugin_host::Registry::new();
        let r = reg.load_path(&p).unwrap_err();
        assert_eq!(r.path, p);
        assert!(
            r.reason.contains("truncated ELF file") || r.reason.contains("not a loadable"),
            "{cut}: {}",
            r.reason
        );
    }
    let mut reg = ctxlab::plugin_host::Registry::new();
    assert!(reg.load_path(&real).unwrap() > 0);
}

/// Finding 4: a table with a NULL entry point was accepted (and crashed at replay); one
/// announcing 2^40 strategies crashed discovery. Both are refused at load.
#[test]
fn plugin_tables_with_null_entry_points_or_absurd_lengths_are_refused() {
    use ctxlab::plugin_host::LoadedPlugin;
    use ctxlab_plugin_api::abi::{EntryFn, PluginTable, ENTRY_SYMBOL};
    let lib = unsafe { libloading::Library::new(example_plugin()) }.unwrap();
    let entry: EntryFn = unsafe { *lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()).unwrap() };
    let good: *const PluginTable = unsafe { entry() };
    let here = Path::new("t.so");
    assert!(unsafe { LoadedPlugin::from_table(good, here) }.is_ok());
    let copy = |edit: &dyn Fn(*mut PluginTable)| -> String {
        let t = Box::leak(Box::new(std::mem::MaybeUninit::<PluginTable>::uninit()));
        unsafe {
            std::ptr::copy_nonoverlapping(good, t.as_mut_ptr(), 1);
            edit(t.as_mut_ptr());
            LoadedPlugin::from_table(t.as_ptr(), here)
                .err()
                .expect("refused")
        }
    };
    let null = |f: *mut usize| unsafe { f.write(0) };
    let e = copy(&|t| null(unsafe { std::ptr::addr_of_mut!((*t).decide) } as *mut usize));
    assert!(e.contains("decide is NULL"), "{e}");
    let e = copy(&|t| null(unsafe { std::ptr::addr_of_mut!((*t).destroy) } as *mut usize));
    assert!(e.contains("destroy is NULL"), "{e}");
    let e = copy(&|t| unsafe { (*t).strategies_len = 1 << 40 });
    assert!(e.contains("1099511627776 strategies"), "{e}");
    std::mem::forget(lib);
}

/// Finding 5: the host copied every op a plugin pushed (10M ops took 714 MB before the op-count
/// refusal). Copying stops at the cap and the decision is marked malformed, so it is refused.
#[test]
fn plugin_output_is_not_copied_past_the_caps() {
    use ctxlab_plugin_api::testing::{TestCall, TestMsg};
    let exe = std::env::current_exe().unwrap();
    let dir = ctxlab::plugin_host::checkout_dir(&exe).unwrap();
    let lib = dir.join(format!(
        "{}ctxlab_fixture_bad_ops{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let mut reg = ctxlab::plugin_host::Registry::new();
    reg.load_path(&lib).unwrap_or_else(|r| panic!("{r}"));
    let s = reg.find("fixture.bad-ops").unwrap();
    let mut msgs: Vec<TestMsg> = (0..4)
        .map(|i| TestMsg::user(&format!("message {i}")))
        .collect();
    msgs.push(TestMsg::tool_call("t", "read", "{}"));
    msgs.push(TestMsg::tool_result("t", "read", "content"));
    let call = TestCall::new(msgs);
    let max = ctxlab::replay::MAX_OPS;
    let mut inst = s
        .create(&serde_json::json!({ "fault": "too_many_ops", "ops": max + 1000 }))
        .unwrap();
    let d = call.with_view(|v| inst.decide(v)).unwrap();
    assert_eq!(d.ops.len(), max, "copying stops at the cap");
    assert_eq!(
        d.malformed,
        vec![format!("more than {max} ops in one answer")]
    );
}

/// Finding 15: `convert DIR -o DIR` overwrote a Claude Code log (named `<session id>.jsonl`)
/// with its conversion, and two sessions with one id went to one file (the first lost).
#[test]
fn convert_never_overwrites_an_input_or_its_own_output() {
    let d = tempfile::tempdir().unwrap();
    let cc = "9874603d-3fea-4774-a473-54ebb495ce20.jsonl";
    let cc_src = sample(&format!("claude-code/-home-maren-src-tidewater/{cc}"));
    std::fs::copy(&cc_src, d.path().join(cc)).unwrap();
    let pi = sample("pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl");
    std::fs::copy(&pi, d.path().join("pi1.jsonl")).unwrap();
    std::fs::copy(&pi, d.path().join("pi2.jsonl")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("convert")
        .arg(d.path())
        .arg("-o")
        .arg(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        std::fs::read(d.path().join(cc)).unwrap(),
        std::fs::read(&cc_src).unwrap(),
        "the input was overwritten"
    );
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 6, "{err}");
    // Converting a single log onto itself is refused.
    let one = d.path().join("pi1.jsonl");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("convert")
        .arg(&one)
        .arg("-o")
        .arg(&one)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&pi).unwrap());
}

/// Finding 11: a usage of u64::MAX wrapped the sums (a cost of $1e17 beside "error 0.0 %"). An
/// implausible figure leaves its call without recorded usage, with a warning naming the line.
#[test]
fn implausible_usage_is_not_summed() {
    let pi = sample("pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl");
    let orig = std::fs::read_to_string(&pi).unwrap();
    let good = formats::load_as(&pi, "pi").unwrap();
    let at = "\"usage\":{\"cacheRead\":0,\"cacheWrite\":7430,";
    assert!(orig.contains(at));
    let line = 1 + orig[..orig.find(at).unwrap()].matches('\n').count() as u32;
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("s.jsonl");
    std::fs::write(
        &p,
        orig.replacen(
            at,
            "\"usage\":{\"cacheRead\":0,\"cacheWrite\":18446744073709551615,",
            1,
        ),
    )
    .unwrap();
    let s = formats::load_as(&p, "pi").unwrap();
    assert!(
        s.warnings
            .iter()
            .any(|w| w.line == line && w.message.contains("implausible")),
        "{:?}",
        s.warnings
    );
    let with = |s: &Session| s.calls.iter().filter(|c| c.usage.is_some()).count();
    assert_eq!(with(&s) + 1, with(&good));
    let total: u64 = s
        .calls
        .iter()
        .filter_map(|c| c.usage.as_ref())
        .map(|u| u.context_tokens())
        .sum();
    assert!(total < 100_000_000, "{total}");
}

/// Peak resident memory (bytes) of `ctxlab inspect <log>`, measured on the child alone
/// (`wait4`'s rusage is the child's own, whatever else the test binary runs meanwhile).
fn inspect_peak_rss(log: &Path) -> u64 {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("inspect")
        .arg(log)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{}: inspect failed ({status})",
        log.display()
    );
    // Linux reports ru_maxrss in KiB.
    usage.ru_maxrss as u64 * 1024
}

/// Finding 2 ("memory must be bounded by the line"), and the "done means": a stream
/// block index of 1e8 made `inspect` allocate 7 GB. Peak memory of `inspect` on the capture with
/// that index, and on a log with one 12 MB line, stays within a small multiple of the line above
/// the same command on the unedited sample.
#[test]
fn inspect_peak_memory_is_bounded_by_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let sample_path = sample("http-capture/anthropic-claude-code.jsonl");
    let orig = std::fs::read_to_string(&sample_path).unwrap();
    let base = inspect_peak_rss(&sample_path);
    let longest = orig.lines().map(str::len).max().unwrap() as u64;
    let indexed = orig.replace("\\\"index\\\": 1,", "\\\"index\\\": 100000000,");
    assert_ne!(indexed, orig);
    let p = dir.path().join("c.jsonl");
    std::fs::write(&p, indexed).unwrap();
    let peak = inspect_peak_rss(&p);
    // Slack for the allocator's noise between two runs of one command.
    const SLACK: u64 = 4 << 20;
    assert!(
        peak <= base + 8 * longest + SLACK,
        "index 1e8: peak {peak} B vs {base} B on the sample (longest line {longest} B)"
    );
    // One 12 MB tool result in a Claude Code log.
    let big = "x".repeat(12 << 20);
    let line = format!(
        "{{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"{big}\"}}]}}}}"
    );
    let small = "{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";
    let reply = "{\"type\":\"assistant\",\"sessionId\":\"s\",\"message\":{\"id\":\"m1\",\"model\":\"claude\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"ok\"}],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n";
    let (a, b) = (dir.path().join("small.jsonl"), dir.path().join("big.jsonl"));
    std::fs::write(&a, format!("{small}{reply}")).unwrap();
    std::fs::write(&b, format!("{small}{line}\n{reply}")).unwrap();
    let (base, peak) = (inspect_peak_rss(&a), inspect_peak_rss(&b));
    let n = line.len() as u64;
    eprintln!(
        "12 MB line: peak {peak} B vs {base} B without it: {:.2}× the line",
        (peak - base.min(peak)) as f64 / n as f64
    );
    assert!(
        peak <= base + 6 * n + SLACK,
        "12 MB line: peak {peak} B vs {base} B without it"
    );
}

/// Finding 21: a parameter file's duplicate key was reported at its first line without its
/// name; `nan` or `inf` read as "got null"; `--param =5` said "unknown parameter ;". Each now
/// names the key and the line it is wrong at.
#[test]
fn parameter_mistakes_are_named() {
    use ctxlab::compare::parse_params;
    let dir = tempfile::tempdir().unwrap();
    let file = |text: &str| {
        let p = dir.path().join("p.toml");
        std::fs::write(&p, text).unwrap();
        p
    };
    let e = parse_params(
        &[],
        Some(&file("keep_last = 1\nother = 2\nkeep_last = 2\n")),
    )
    .unwrap_err();
    match &e {
        ctxlab::Error::Parse { line, message, .. } => {
            assert_eq!(*line, 3, "{e}");
            assert!(
                message.contains("`keep_last` given twice (first at line 1)"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
    for bad in ["nan", "inf", "-inf"] {
        let e = parse_params(&[], Some(&file(&format!("a = 1\nkeep_last = {bad}\n")))).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(":2:") && msg.contains("`keep_last` is not a finite number"),
            "{bad}: {msg}"
        );
    }
    let e = parse_params(&["=5".to_string()], None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--param =5: the parameter name is empty"), "{e}");
}

/// Finding 21: a tune whose every candidate failed exited 0 and said "no parameter set meets the
/// constraints" though none were given. It says every set failed, with the first reason, and
/// exits 1.
#[test]
fn a_tune_whose_every_set_fails_is_an_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .arg("tune")
        .arg(sample(
            "pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl",
        ))
        .args([
            "-s",
            "example.keep-last-results",
            "--sweep",
            "keep_last=-1,-2",
        ])
        .env("CTXLAB_PLUGIN_PATH", example_plugin())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("every parameter set failed"), "{stdout}");
    assert!(!stdout.contains("meets the constraints"), "{stdout}");
    assert!(
        stderr.contains("every one of the 2 parameter sets failed")
            && stderr.contains("-1 is below the minimum"),
        "{stderr}"
    );
}

/// Finding 21: a folder's unreadable files were warned as `file:0:` with the path said twice,
/// and a folder of 3,000 bad files gave a 910 KB error. A file-level warning has no line 0, and
/// past 20 files the rest are counted.
#[test]
fn folder_failures_are_named_once_and_summarized() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..300 {
        std::fs::write(
            dir.path().join(format!("f{i:03}.jsonl")),
            format!("junk {i}\n"),
        )
        .unwrap();
    }
    let e = formats::load(dir.path()).unwrap_err().to_string();
    assert!(e.len() < 10_000, "{} bytes", e.len());
    assert!(e.contains("no session could be read (300 files)"), "{e}");
    assert!(
        e.contains("… and 280 more files not loaded (280 not a session log; not listed)"),
        "{e}"
    );
    std::fs::copy(
        sample("pi/2026-03-02T10-15-00-000Z_6466616d-2a07-4f76-ac98-1ab5e8ab6f1f.jsonl"),
        dir.path().join("good.jsonl"),
    )
    .unwrap();
    let s = formats::load(dir.path()).unwrap().remove(0);
    let folder: Vec<String> = s
        .warnings
        .iter()
        .filter(|w| w.message.contains("not loaded") || w.message.contains("more files"))
        .map(|w| w.to_string())
        .collect();
    assert_eq!(folder.len(), 21, "{folder:#?}");
    let first = &folder[1];
    assert!(!first.contains(":0:"), "{first}");
    let f = dir.path().join("f000.jsonl").display().to_string();
    assert_eq!(first.matches(&f).count(), 1, "the path once: {first}");
}
