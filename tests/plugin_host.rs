//! The plugin host against real shared libraries: discovery, refusals, and faults caught at the
//! FFI boundary. The fixture and example `.so` files come from `cargo build --workspace` (`make
//! test` runs it first); a missing one fails the test with that instruction.

use ctxlab::plugin_host::{
    checkout_dir, is_plugin_file_name, Origin, Registry, SearchDir, StrategyEntry,
};
use ctxlab::Error;
use ctxlab_plugin_api::abi::{PluginTable, FLAG_PINNED};
use ctxlab_plugin_api::sdk::{EventKind, OpKind, Scope};
use ctxlab_plugin_api::testing::{TestCall, TestMsg};
use serde_json::json;
use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::{Path, PathBuf};

/// `target/<profile>/`, where cargo puts the workspace's cdylibs.
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    checkout_dir(&exe)
        .unwrap_or_else(|| panic!("{} is not inside a cargo target folder", exe.display()))
}

/// A library the workspace builds, by crate lib name (`ctxlab_fixture_panics`).
fn built(lib: &str) -> PathBuf {
    let p = build_dir().join(format!("{DLL_PREFIX}{lib}{DLL_SUFFIX}"));
    assert!(
        p.is_file(),
        "{} is missing: run `cargo build --workspace` first (`make test` does it); \
         `cargo test` alone does not build plugin cdylibs",
        p.display()
    );
    p
}

fn load_one(lib: &str) -> (Registry, PathBuf) {
    let path = built(lib);
    let mut reg = Registry::new();
    if let Err(r) = reg.load_path(&path) {
        panic!("{lib} refused: {r}");
    }
    (reg, path)
}

fn strategy<'r>(reg: &'r Registry, id: &str) -> &'r StrategyEntry {
    reg.find(id).unwrap_or_else(|| panic!("no strategy {id}"))
}

fn env_dir(path: &Path) -> SearchDir {
    SearchDir {
        path: path.to_path_buf(),
        origin: Origin::EnvVar,
    }
}

fn plain_session(n: usize) -> Vec<TestMsg> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                TestMsg::user(&format!("question {i}"))
            } else {
                TestMsg::assistant(&format!("answer {i}"))
            }
        })
        .collect()
}

#[test]
fn a_panic_in_decide_becomes_a_plugin_error_and_the_process_goes_on() {
    let (reg, _) = load_one("ctxlab_fixture_panics");
    let mut inst = strategy(&reg, "fixture.panics")
        .create(&json!({ "at_call": 2 }))
        .unwrap();
    let mut call = TestCall::new(plain_session(3));
    for i in 0..2 {
        call.call_index = i;
        assert!(call.with_view(|v| inst.decide(v)).is_ok(), "call {i}");
    }
    call.call_index = 2;
    match call.with_view(|v| inst.decide(v)) {
        Err(Error::Plugin { plugin, message }) => {
            assert!(
                plugin.contains("fixture-panics") && plugin.contains("fixture.panics"),
                "{plugin}"
            );
            assert_eq!(message, "panic: fixture panic at call 2");
        }
        other => panic!("expected a plugin error, got {other:?}"),
    }
    // Same instance, next call: the panic was contained.
    call.call_index = 3;
    assert!(call.with_view(|v| inst.decide(v)).is_ok());
}

#[test]
fn wrong_abi_is_refused_naming_the_file_and_both_versions() {
    let path = built("ctxlab_fixture_wrong_abi");
    let mut reg = Registry::new();
    let r = reg.load_path(&path).unwrap_err();
    assert_eq!(r.path, path);
    assert!(
        r.reason.contains("plugin ABI 2.0")
            && r.reason
                .contains(&format!("ABI 1.{}", ctxlab_plugin_api::abi::ABI_MINOR)),
        "{}",
        r.reason
    );
    assert!(r.to_string().starts_with(&path.display().to_string()));
    assert_eq!(reg.refused().len(), 1);
    assert!(reg.strategies().is_empty());
}

#[test]
fn a_short_table_is_refused_from_its_header() {
    let path = built("ctxlab_fixture_short_table");
    let mut reg = Registry::new();
    let r = reg.load_path(&path).unwrap_err();
    let need = std::mem::size_of::<PluginTable>();
    assert!(
        r.reason.contains(&format!("needs at least {need}"))
            && r.reason.contains("plugin table is"),
        "{}",
        r.reason
    );
    assert_eq!(r.path, path);
}

#[test]
fn a_text_file_named_like_a_plugin_is_refused_as_not_a_shared_library() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir
        .path()
        .join(format!("{DLL_PREFIX}ctxlab_plugin_bogus{DLL_SUFFIX}"));
    std::fs::write(&bogus, "this is not a library\n").unwrap();
    std::fs::write(
        dir.path().join("README.txt"),
        "ignored: not a plugin name\n",
    )
    .unwrap();
    let reg = Registry::discover_in(&[env_dir(dir.path())]);
    assert!(reg.strategies().is_empty());
    assert_eq!(reg.refused().len(), 1, "{:?}", reg.refused());
    assert_eq!(reg.refused()[0].path, bogus);
    assert!(
        reg.refused()[0]
            .reason
            .contains("not a loadable shared library"),
        "{}",
        reg.refused()[0].reason
    );
}

#[test]
fn a_shared_library_without_the_entry_symbol_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nosym.c");
    std::fs::write(&src, "int not_a_plugin(void) { return 42; }\n").unwrap();
    let lib = dir
        .path()
        .join(format!("{DLL_PREFIX}ctxlab_plugin_nosym{DLL_SUFFIX}"));
    let st = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .expect("a C compiler `cc` is needed (scripts/setup.sh installs gcc)");
    assert!(st.success(), "cc failed");
    let mut reg = Registry::new();
    let r = reg.load_path(&lib).unwrap_err();
    assert!(
        r.reason.contains("missing symbol ctxlab_plugin_entry_v1"),
        "{}",
        r.reason
    );
}

#[test]
fn a_duplicate_strategy_id_is_refused_naming_the_first_owner() {
    let original = built("ctxlab_plugin_example");
    let dir = tempfile::tempdir().unwrap();
    // Two copies are two different files (a symlink would be the same file, loaded once).
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
        std::fs::copy(&original, d.join(original.file_name().unwrap())).unwrap();
    }
    let reg = Registry::discover_in(&[env_dir(&a), env_dir(&b)]);
    let first = a.join(original.file_name().unwrap());
    assert_eq!(strategy(&reg, "example.keep-last-results").meta.path, first);
    assert_eq!(reg.refused().len(), 1);
    let r = &reg.refused()[0];
    assert_eq!(r.path, b.join(original.file_name().unwrap()));
    assert!(
        r.reason.contains(
            "strategy id example.keep-last-results is already provided by plugin example"
        ) && r.reason.contains(&first.display().to_string()),
        "{}",
        r.reason
    );
}

#[cfg(unix)]
#[test]
fn the_same_file_reached_twice_loads_once() {
    let original = built("ctxlab_plugin_example");
    let dir = tempfile::tempdir().unwrap();
    let link = dir
        .path()
        .join(format!("{DLL_PREFIX}ctxlab_plugin_link{DLL_SUFFIX}"));
    std::os::unix::fs::symlink(&original, &link).unwrap();
    let reg =
        Registry::discover_in(&[env_dir(dir.path()), env_dir(dir.path()), env_dir(&original)]);
    assert!(reg.refused().is_empty(), "{:?}", reg.refused());
    assert_eq!(reg.plugins().len(), 1);
    assert_eq!(reg.strategies().len(), 1);
}

#[test]
fn a_missing_folder_named_in_the_plugin_path_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("nope");
    let reg = Registry::discover_in(&[env_dir(&gone)]);
    assert_eq!(reg.refused().len(), 1);
    assert!(reg.refused()[0]
        .reason
        .contains("named in CTXLAB_PLUGIN_PATH"));
    // The default places are often absent; that is not worth a complaint.
    let quiet = Registry::discover_in(&[SearchDir {
        path: gone,
        origin: Origin::UserData,
    }]);
    assert!(quiet.refused().is_empty());
}

#[test]
fn the_checkout_build_folder_yields_real_plugins_but_not_fixtures() {
    built("ctxlab_fixture_panics");
    let reg = Registry::discover_in(&[SearchDir {
        path: build_dir(),
        origin: Origin::Checkout,
    }]);
    let example = strategy(&reg, "example.keep-last-results");
    assert_eq!(example.meta.path, built("ctxlab_plugin_example"));
    assert!(
        reg.strategies()
            .iter()
            .all(|s| !s.meta.id.starts_with("fixture.")),
        "fixtures are loaded by path only"
    );
    assert!(reg
        .refused()
        .iter()
        .all(|r| !r.path.to_string_lossy().contains("fixture")));
    assert!(is_plugin_file_name("libctxlab_plugin_fuseraft.so"));
    assert!(is_plugin_file_name("ctxlab_plugin_fuseraft.dll"));
    assert!(!is_plugin_file_name("libctxlab_fixture_panics.so"));
    assert!(!is_plugin_file_name("libctxlab_plugin_fuseraft.rlib"));
}

#[test]
fn test_binaries_and_the_cli_find_the_same_build_folder() {
    let dir = build_dir();
    assert_eq!(
        checkout_dir(&dir.join("deps").join("plugin_host-0123")),
        Some(dir.clone())
    );
    assert_eq!(checkout_dir(&dir.join("ctxlab")), Some(dir));
    assert_eq!(checkout_dir(Path::new("/usr/local/bin/ctxlab")), None);
}

#[test]
fn an_in_process_table_counts_like_a_loaded_one() {
    let mut reg = Registry::new();
    assert_eq!(
        reg.add_in_process(ctxlab_plugin_example::plugin_table(), "example")
            .unwrap(),
        1
    );
    assert_eq!(
        reg.add_in_process(ctxlab_plugin_example::plugin_table(), "example")
            .unwrap(),
        0
    );
    let r = reg.load_path(&built("ctxlab_plugin_example")).unwrap_err();
    assert!(
        r.reason.contains("already provided by plugin example")
            && r.reason.contains("<in-process: example>"),
        "{}",
        r.reason
    );
}

#[test]
fn example_plugin_round_trips_through_the_abi() {
    let (reg, _) = load_one("ctxlab_plugin_example");
    let s = strategy(&reg, "example.keep-last-results");
    assert_eq!(s.meta.system, "example");
    assert_eq!(s.meta.export_formats, vec!["example-env"]);
    assert_eq!(s.meta.params[0].name, "keep_last");
    assert_eq!(s.meta.params[0].key, "EXAMPLE_KEEP_LAST_TOOL_RESULTS");

    let err = s
        .create(&json!({ "keep_last": -3 }))
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("keep_last") && err.to_string().contains("minimum"),
        "{err}"
    );
    let err = s.create(&json!({ "keep": 3 })).err().expect("refused");
    assert!(err.to_string().contains("unknown parameter keep"), "{err}");

    let mut inst = s.create(&json!({ "keep_last": 1 })).unwrap();
    let msgs = vec![
        TestMsg::user("go"),
        TestMsg::tool_call("a", "read", "{}"),
        TestMsg::tool_result("a", "read", "first"),
        TestMsg::tool_call("b", "read", "{}"),
        TestMsg::tool_result("b", "read", "second"),
    ];
    let d = TestCall::new(msgs).with_view(|v| inst.decide(v)).unwrap();
    assert!(d.malformed.is_empty());
    assert_eq!(d.ops.len(), 1);
    assert_eq!(
        (d.ops[0].start, d.ops[0].end, d.ops[0].scope),
        (2, 3, Scope::Persistent)
    );
    assert_eq!(
        d.ops[0].kind,
        OpKind::Mask {
            placeholder: "[tool result masked: only the last 1 are kept]".into()
        }
    );
    assert_eq!(d.events[0].kind, EventKind::Compaction);
    assert_eq!(d.gauges, vec![("tool_results_shown".to_string(), 1.0)]);

    let text = inst.export("example-env").unwrap();
    assert_eq!(
        s.import("example-env", &text).unwrap(),
        json!({ "keep_last": 1 })
    );
    let e = inst.export("yaml").unwrap_err();
    assert!(
        matches!(&e, Error::Plugin { plugin, .. } if plugin.contains("example")),
        "{e}"
    );
    assert!(s
        .import("example-env", "X=1")
        .unwrap_err()
        .to_string()
        .contains("line 1"));
}

/// A context where every fault of `fixture.bad-ops` can fire: plain messages, one tool pair.
fn bad_ops_context() -> Vec<TestMsg> {
    let mut m = plain_session(4);
    m.push(TestMsg::tool_call("t", "read", "{}"));
    m.push(TestMsg::tool_result("t", "read", "content"));
    m
}

#[test]
fn bad_ops_fixture_returns_exactly_the_fault_asked_for() {
    let (reg, _) = load_one("ctxlab_fixture_bad_ops");
    let s = strategy(&reg, "fixture.bad-ops");
    let call = TestCall::new(bad_ops_context());
    let decide = |params| {
        let mut inst = s.create(&params).unwrap();
        call.with_view(|v| inst.decide(v)).unwrap()
    };
    let ranges = |d: &ctxlab::plugin_host::RawDecision| -> Vec<(usize, usize)> {
        d.ops.iter().map(|o| (o.start, o.end)).collect()
    };

    assert_eq!(
        ranges(&decide(json!({ "fault": "out_of_range" }))),
        vec![(6, 7)]
    );
    assert_eq!(
        ranges(&decide(json!({ "fault": "overlapping" }))),
        vec![(0, 2), (1, 3)]
    );
    assert_eq!(
        ranges(&decide(json!({ "fault": "unsorted" }))),
        vec![(1, 2), (0, 1)]
    );
    let d = decide(json!({ "fault": "oversized_summary" }));
    match &d.ops[..] {
        [op] => match &op.kind {
            OpKind::Summarize {
                text,
                max_tokens: 0,
                ..
            } => assert!(text.len() > 8 * "question 0".len()),
            k => panic!("{k:?}"),
        },
        ops => panic!("{ops:?}"),
    }
    let d = decide(json!({ "fault": "too_many_ops", "ops": 5000 }));
    assert_eq!(d.ops.len(), 5000);
    assert!(d.ops.iter().all(|o| o.scope == Scope::ThisCall));
    // Nothing fires before at_call.
    let mut late = s
        .create(&json!({ "fault": "out_of_range", "at_call": 9 }))
        .unwrap();
    assert!(call.with_view(|v| late.decide(v)).unwrap().ops.is_empty());
}

#[test]
fn bad_ops_touches_pinned_pins_first_when_nothing_is_pinned() {
    let (reg, _) = load_one("ctxlab_fixture_bad_ops");
    let mut inst = strategy(&reg, "fixture.bad-ops")
        .create(&json!({ "fault": "touches_pinned" }))
        .unwrap();
    let d = TestCall::new(bad_ops_context())
        .with_view(|v| inst.decide(v))
        .unwrap();
    assert_eq!(d.ops.len(), 1);
    assert_eq!((&d.ops[0].kind, d.ops[0].start), (&OpKind::Pin, 0));
    // Next call: the host shows message 0 pinned; the fixture drops it.
    let mut msgs = bad_ops_context();
    msgs[0] = msgs[0].clone().flag(FLAG_PINNED);
    let d = TestCall::new(msgs).with_view(|v| inst.decide(v)).unwrap();
    assert_eq!(
        (&d.ops[0].kind, d.ops[0].start, d.ops[0].end),
        (&OpKind::Drop, 0, 1)
    );
}

#[test]
fn split_pair_fixture_drops_a_tool_call_but_keeps_its_result() {
    let (reg, _) = load_one("ctxlab_fixture_split_pair");
    let mut inst = strategy(&reg, "fixture.split-pair")
        .create(&json!({}))
        .unwrap();
    let call = TestCall::new(bad_ops_context());
    let d = call.with_view(|v| inst.decide(v)).unwrap();
    assert_eq!(d.ops.len(), 1);
    assert_eq!(
        (&d.ops[0].kind, d.ops[0].start, d.ops[0].end),
        (&OpKind::Drop, 4, 5)
    );
    // Once per agent.
    assert!(call.with_view(|v| inst.decide(v)).unwrap().ops.is_empty());
}

#[test]
fn compact_fixture_summarizes_only_above_its_trigger() {
    let (reg, _) = load_one("ctxlab_fixture_compact");
    let mut inst = strategy(&reg, "fixture.compact")
        .create(&json!({ "trigger": 0.5 }))
        .unwrap();
    let msgs: Vec<TestMsg> = plain_session(10)
        .into_iter()
        .map(|m| m.tokens(100))
        .collect();
    let d = TestCall::new(msgs.clone())
        .window(4000)
        .with_view(|v| inst.decide(v))
        .unwrap();
    assert!(d.ops.is_empty() && d.events.is_empty());
    let d = TestCall::new(msgs)
        .window(1000)
        .with_view(|v| inst.decide(v))
        .unwrap();
    assert_eq!(d.ops.len(), 1);
    assert!(matches!(
        d.ops[0].kind,
        OpKind::Summarize {
            max_tokens: 2000,
            ..
        }
    ));
    assert_eq!((d.ops[0].start, d.ops[0].end), (0, 5));
}

fn ctxlab(args: &[&str], plugin_path: &std::ffi::OsStr) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ctxlab"))
        .args(args)
        .env("CTXLAB_PLUGIN_PATH", plugin_path)
        .output()
        .expect("run ctxlab")
}

#[test]
fn cli_lists_what_the_plugin_path_and_the_checkout_hold_and_what_was_refused() {
    let compact = built("ctxlab_fixture_compact");
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir
        .path()
        .join(format!("{DLL_PREFIX}ctxlab_plugin_bogus{DLL_SUFFIX}"));
    std::fs::write(&bogus, "not a library").unwrap();
    let path = std::env::join_paths([compact.as_path(), dir.path()]).unwrap();

    let out = ctxlab(&["plugins", "list", "--json"], &path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = v["strategies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    // CTXLAB_PLUGIN_PATH comes first, the checkout's build folder after it.
    assert_eq!(ids[0], "fixture.compact", "{ids:?}");
    assert!(ids.contains(&"example.keep-last-results"), "{ids:?}");
    assert_eq!(v["strategies"][0]["path"], json!(compact));
    let refused = v["refused"].as_array().unwrap();
    assert!(
        refused.iter().any(|r| r["path"] == json!(bogus)
            && r["reason"]
                .as_str()
                .unwrap()
                .contains("not a loadable shared library")),
        "{refused:?}"
    );
    assert_eq!(v["searched"][0]["origin"], "env_var");
    assert_eq!(v["searched"][1]["path"], json!(dir.path()));
    let last = v["searched"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["origin"], "checkout");

    let out = ctxlab(&["plugins", "info", "fixture.compact"], &path);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("trigger  (float, default 0.8, 0.01 to 1)"),
        "{text}"
    );
    assert!(
        text.contains("summary_tokens  (int, default 2,000, at least 1)"),
        "{text}"
    );
    assert!(text.contains("Export formats: none"), "{text}");

    let out = ctxlab(
        &["plugins", "info", "example.keep-last-results", "--json"],
        &path,
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["params"][0]["key"], "EXAMPLE_KEEP_LAST_TOOL_RESULTS");
    assert_eq!(v["export_formats"], json!(["example-env"]));

    let out = ctxlab(&["plugins", "info", "nope"], &path);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown strategy nope") && err.contains("fixture.compact"),
        "{err}"
    );
    assert!(
        err.contains("refused (run `ctxlab plugins` to see why)"),
        "{err}"
    );
}

#[test]
fn an_installed_executable_finds_the_system_folder_of_its_own_prefix() {
    // The .deb installs /usr/bin/ctxlab and /usr/lib/ctxlab/plugins; `cargo install` and a
    // package unpacked into a throwaway root keep the same shape under their own prefix.
    assert_eq!(
        ctxlab::plugin_host::system_dir(Path::new("/usr/bin/ctxlab")),
        Some(PathBuf::from("/usr/lib/ctxlab/plugins"))
    );
    assert_eq!(
        ctxlab::plugin_host::system_dir(Path::new("/tmp/root/usr/bin/ctxlab-app")),
        Some(PathBuf::from("/tmp/root/usr/lib/ctxlab/plugins"))
    );
    // A build folder is no prefix.
    assert_eq!(
        ctxlab::plugin_host::system_dir(Path::new("/src/ctxlab/target/debug/ctxlab")),
        None
    );
    // A packaged strategy is found there, after the user's own folder.
    let root = tempfile::tempdir().unwrap();
    let sys = root.path().join("usr/lib/ctxlab/plugins");
    std::fs::create_dir_all(&sys).unwrap();
    let lib = built("ctxlab_plugin_example");
    std::fs::copy(&lib, sys.join(lib.file_name().unwrap())).unwrap();
    let user = root.path().join("home/.local/share/ctxlab/plugins");
    let reg = Registry::discover_in(&[
        SearchDir {
            path: user,
            origin: Origin::UserData,
        },
        SearchDir {
            path: sys.clone(),
            origin: Origin::System,
        },
    ]);
    let example = strategy(&reg, "example.keep-last-results");
    assert!(
        example.meta.path.starts_with(&sys),
        "{:?}",
        example.meta.path
    );
    assert!(reg.refused().is_empty(), "{:?}", reg.refused());
}
