//! The plugin's export read by codetether-agent 4.7.4's own code: its config loader
//! (`src/config/load.rs` `Config::load` and `parse_config`, i.e. `toml::from_str::<Config>`), its
//! environment readers (`src/session/helper/token.rs` `session_completion_max_tokens`,
//! `src/session/context/policy.rs` `effective_policy`, codetether-rlm 0.1.1
//! `model_select/resolve.rs` `select_rlm_model`), and, for the compiled-in constants the export
//! writes as `const` lines, the very declarations in the crate's source they replace.

mod common;

use codetether_agent::config::Config;
use codetether_agent::rlm::{select_rlm_model, RlmModelPurpose, RlmModelSource};
use codetether_agent::session::{effective_policy, DerivePolicy, Session};
use serde_json::json;
use std::path::PathBuf;

fn tuned() -> serde_json::Value {
    json!({
        "model": "anthropic/claude-sonnet-4-5",
        "rlm_model": "zai/glm-5",
        "history_trigger_messages": 120,
        "session_max_tokens": 16_384,
        "keep_last_candidates": [20, 10, 5],
        "truncate_keep_last": 3,
        "safety_budget_ratio": 0.85,
        "reserve_overhead_tokens": 4_096,
        "fallback_chunk_ratio": 0.2,
        "oversized_last_message_ratio": 0.3,
        "terminal_payload_caps": [65_536, 8_192],
        "terminal_emergency_cap_bytes": 512,
    })
}

fn export(params: &serde_json::Value, format: &str) -> String {
    let reg = common::registry();
    let entry = reg.require("codetether.compression").unwrap();
    let mut inst = entry.create(params).unwrap();
    inst.export(format).unwrap()
}

/// `export NAME=VALUE` lines (commented in the TOML export) as pairs.
fn env_of(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start_matches('#').trim();
            let (k, v) = l.strip_prefix("export ")?.split_once('=')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// Everything in one test: it changes the process's working folder and environment.
#[tokio::test(flavor = "current_thread")]
async fn codetether_reads_every_tuned_value_of_the_export() {
    let text = export(&tuned(), "toml");
    let src = crate_source();

    // The loader proper: codetether.toml in the working folder, no global config (HOME and
    // XDG_CONFIG_HOME point at an empty folder: `Config::global_config_path` is under them).
    let dir = std::env::temp_dir().join(format!("ctxlab-codetether-{}", std::process::id()));
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(dir.join("codetether.toml"), &text).unwrap();
    std::env::set_var("HOME", &home);
    std::env::set_var("XDG_CONFIG_HOME", home.join(".config"));
    for (k, _) in env_of(&text) {
        std::env::remove_var(k);
    }
    std::env::set_current_dir(&dir).unwrap();
    let loaded = Config::load()
        .await
        .unwrap_or_else(|e| panic!("{e:#}\n{text}"));
    assert_eq!(
        loaded.default_model.as_deref(),
        Some("anthropic/claude-sonnet-4-5"),
        "{text}"
    );
    // 4.7.4's Config::merge (src/config/merge.rs) does not carry `[rlm]` from a file: what
    // Config::load returns keeps the defaults (docs/strategies/codetether.md says so).
    assert_eq!(loaded.rlm.history_trigger_messages, 0);
    assert_eq!(loaded.rlm.root_model, None);

    // parse_config (load.rs): toml::from_str::<Config> reads the [rlm] table.
    let parsed: Config = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(parsed.rlm.history_trigger_messages, 120);
    assert_eq!(parsed.rlm.root_model.as_deref(), Some("zai/glm-5"));
    assert_eq!(
        parsed.default_model.as_deref(),
        Some("anthropic/claude-sonnet-4-5")
    );

    // The environment the export lists, as CodeTether's readers see it.
    let env = env_of(&text);
    assert_eq!(
        env,
        env_of(&export(&tuned(), "env")),
        "toml and env exports differ"
    );
    let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "CODETETHER_SESSION_MAX_TOKENS",
            "CODETETHER_CONTEXT_POLICY",
            "CODETETHER_RLM_MODEL"
        ]
    );
    for (k, v) in &env {
        std::env::set_var(k, v);
    }
    assert_eq!(
        codetether_agent::session::helper::token::session_completion_max_tokens(),
        16_384
    );
    let session = Session::new().await.unwrap();
    assert!(matches!(
        effective_policy(&session, "anthropic/claude-sonnet-4-5"),
        DerivePolicy::Legacy
    ));
    // The RLM model: [rlm] root_model when it reaches the session, else the environment.
    let via_config = select_rlm_model(
        &parsed.rlm,
        RlmModelPurpose::Compression,
        "anthropic/claude-sonnet-4-5",
        |_| None,
    );
    assert_eq!(
        (via_config.model.as_str(), via_config.source),
        ("zai/glm-5", RlmModelSource::RootConfig)
    );
    let via_env = select_rlm_model(
        &loaded.rlm,
        RlmModelPurpose::Compression,
        "anthropic/claude-sonnet-4-5",
        |_| None,
    );
    assert_eq!(
        (via_env.model.as_str(), via_env.source),
        ("zai/glm-5", RlmModelSource::Env)
    );
    for (k, _) in &env {
        std::env::remove_var(k);
    }
    std::env::set_current_dir(common::repo()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);

    // The compiled-in constants: each `const` line names a declaration of that name and type
    // in that file of the crate's source, and the chunker line quotes the call it edits.
    let mut consts = 0;
    let mut file = None;
    for line in text.lines() {
        let body = line.trim_start_matches('#').trim();
        if let Some(rest) = body.strip_prefix("src/session/helper/") {
            let (name, call) = rest.split_once(' ').unwrap_or((rest, ""));
            let (name, at) = name
                .split_once(':')
                .map_or((name, None), |(n, l)| (n, Some(l)));
            let path = src.join("src/session/helper").join(name);
            let code = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (named by `{line}`)", path.display()));
            if let Some(at) = at {
                // The literal line: the same call with CodeTether's 0.25.
                let n: usize = at.parse().unwrap();
                let real = code.lines().nth(n - 1).unwrap().trim();
                let head = call.split(" * ").next().unwrap();
                assert_eq!(
                    real,
                    "RlmChunker::compress(context, (ctx_window as f64 * 0.25) as usize, None)",
                    "{name}:{n}"
                );
                assert!(real.starts_with(head), "{line}\n{real}");
                assert!(call.contains("* 0.2) as usize, None)"), "{line}");
            }
            file = Some(code);
            continue;
        }
        if let Some(decl) = body.strip_prefix("const ") {
            let (konst, rest) = decl.split_once(':').unwrap();
            let ty = rest.split('=').next().unwrap().trim();
            let code = file.as_ref().expect("a const line follows its file line");
            let real = code
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("const {konst}:")))
                .unwrap_or_else(|| panic!("no const {konst} in its file ({line})"));
            let real_ty = real
                .split(':')
                .nth(1)
                .unwrap()
                .split('=')
                .next()
                .unwrap()
                .trim();
            // Arrays keep their element type; the length is the tuned list's.
            let elem = |t: &str| t.split(';').next().unwrap().to_string();
            assert_eq!(elem(ty), elem(real_ty), "{line} vs {real}");
            consts += 1;
        }
    }
    assert_eq!(consts, 7, "every tuned constant is exported:\n{text}");
}

/// codetether-agent 4.7.4's source as cargo unpacked it (`$CARGO_HOME/registry/src/*/`); read
/// before the test moves HOME.
fn crate_source() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo")
        });
    let reg = home.join("registry/src");
    std::fs::read_dir(&reg)
        .unwrap_or_else(|e| panic!("{}: {e}", reg.display()))
        .filter_map(|d| d.ok())
        .map(|d| d.path().join("codetether-agent-4.7.4"))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| {
            panic!(
                "codetether-agent-4.7.4 is not unpacked under {}",
                reg.display()
            )
        })
}
