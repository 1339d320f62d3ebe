//! Token counters through the public API: exact counts against tiktoken-rs (the reference
//! implementation of OpenAI's tokenizers), and calibration on synthetic sessions.

use ctxlab::model::*;
use ctxlab::tokens::{self, calibrate, calibrate_session, CallSample};

/// Texts that exercise the pre-tokenizer: prose, code, JSON, numbers, whitespace runs, CJK,
/// emoji, combining marks, contractions, special-token strings (plain text in a log).
const TEXTS: &[&str] = &[
    "",
    "hello world",
    "tiktoken is great!",
    "The quick brown fox jumps over the lazy dog. It's 2024; they'll've been 12345678 times.",
    "fn main() {\n    let x: Vec<u64> = (0..10).map(|i| i * i).collect();\n    println!(\"{x:?}\");\n}\n",
    "{\"type\":\"tool_use\",\"id\":\"toolu_01A\",\"name\":\"Read\",\"input\":{\"file_path\":\"/src/main.rs\"}}",
    "    \n\n\t\t   trailing spaces   \n",
    "中文分词测试，包含标点。日本語のテキストも。한국어 문장도 있습니다.",
    "emoji 😀👍🏽 and combining e\u{301} and ZWJ 👩‍👩‍👧",
    "<|endoftext|> is a special token only when asked to be",
    "CAPITALS and MixedCase and snake_case_names and camelCaseNames",
    "http://example.com/path?query=1&b=2#frag /usr/local/bin/cargo C:\\Windows\\path",
];

fn long_text() -> String {
    let mut s = String::new();
    for i in 0..300 {
        s.push_str(TEXTS[i % TEXTS.len()]);
        s.push_str(&format!(" line {i}: value={} ", i * 7919));
    }
    s
}

#[test]
fn exact_counts_match_tiktoken() {
    let cases = [
        ("o200k", tiktoken_rs::o200k_base_singleton()),
        ("cl100k", tiktoken_rs::cl100k_base_singleton()),
    ];
    let long = long_text();
    for (name, reference) in cases {
        let c = tokens::counter(name).unwrap();
        for text in TEXTS.iter().copied().chain([long.as_str()]) {
            assert_eq!(
                c.count_text(text),
                reference.encode_ordinary(text).len() as u64,
                "{name} on {text:?}"
            );
        }
    }
}

#[test]
fn exact_counts_of_known_strings() {
    // Values from tiktoken (and OpenAI's cookbook for "tiktoken is great!" in cl100k: 6).
    let o200k = tokens::counter("o200k").unwrap();
    let cl100k = tokens::counter("cl100k").unwrap();
    assert_eq!(o200k.count_text("hello world"), 2);
    assert_eq!(cl100k.count_text("hello world"), 2);
    assert_eq!(cl100k.count_text("tiktoken is great!"), 6);
    assert_eq!(o200k.count_text("tiktoken is great!"), 6);
    // CJK is where the vocabularies differ most.
    let cjk = "中文分词测试，包含标点。";
    assert!(o200k.count_text(cjk) < cl100k.count_text(cjk));
}

#[test]
fn exact_message_counts_add_framing_and_images() {
    let o200k = tokens::counter("o200k").unwrap();
    let parts = vec![
        Part::Text {
            text: "hello world".into(),
        },
        Part::ToolCall {
            id: "c1".into(),
            name: "Read".into(),
            args: "{}".into(),
        },
        Part::ToolResult {
            call_id: "c1".into(),
            content: "hello world".into(),
            is_error: false,
        },
        Part::Image {
            media_type: "image/png".into(),
            bytes: 10,
        },
    ];
    let expected = 4 + 2 + o200k.count_text("Read") + o200k.count_text("{}") + 2 + 765;
    assert_eq!(o200k.count_parts(&parts), expected);
}

#[test]
fn every_counter_counts_each_kind_of_part() {
    let parts = |p: Part| vec![p];
    for name in tokens::COUNTERS {
        let c = tokens::counter(name).unwrap();
        let empty = c.count_parts(&[]);
        assert!(empty > 0, "{name}: a message has framing overhead");
        for p in [
            Part::Text {
                text: "some words here".into(),
            },
            Part::Thinking {
                text: "some words here".into(),
            },
            Part::ToolCall {
                id: "x".into(),
                name: "Bash".into(),
                args: "{\"command\":\"ls -la\"}".into(),
            },
            Part::ToolResult {
                call_id: "x".into(),
                content: "total 0".into(),
                is_error: false,
            },
            Part::Image {
                media_type: "image/png".into(),
                bytes: 200_000,
            },
        ] {
            assert!(
                c.count_parts(&parts(p.clone())) > empty,
                "{name} ignores {p:?}"
            );
        }
    }
}

/// A deterministic generator, so the noisy test is reproducible.
struct Lcg(u64);
impl Lcg {
    fn next_unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn calibration_recovers_overhead_and_ratio_from_noisy_calls() {
    // Two agents with different hidden overheads; the context grows, is compacted, grows again.
    let mut rng = Lcg(7);
    let mut samples = Vec::new();
    let truth = [(12_000.0, 1.15), (3_000.0, 0.9)];
    for call in 0..400 {
        let agent = usize::from(call % 4 == 3);
        let raw = 2_000 + (call as u64 % 150) * 1_000;
        let (overhead, ratio) = truth[agent];
        let noise = 1.0 + (rng.next_unit() - 0.5) * 0.04; // ±2 %
        let recorded = ((overhead + ratio * raw as f64) * noise).round() as u64;
        samples.push(CallSample {
            call,
            agent,
            raw,
            recorded,
            known: 0,
            whole: false,
            model: 0,
        });
    }
    let c = calibrate(&samples).unwrap();
    for (agent, (overhead, ratio)) in truth.iter().enumerate() {
        let fit = c.agent(agent).unwrap();
        assert!(fit.own_fit);
        assert!(
            (fit.fit.ratio - ratio).abs() < 0.01,
            "agent {agent}: {fit:?}"
        );
        assert!(
            (fit.fit.overhead - overhead).abs() < 800.0,
            "agent {agent}: {fit:?}"
        );
        // uniform noise of ±2 % has a mean absolute error of 1 %
        assert!(
            fit.mean_ape > 0.7 && fit.mean_ape < 1.3,
            "agent {agent}: {fit:?}"
        );
        assert!(
            fit.p95_ape > 1.6 && fit.p95_ape < 2.3,
            "agent {agent}: {fit:?}"
        );
    }
    assert_eq!(c.samples, 400);
    assert!(c.mean_ape > 0.7 && c.mean_ape < 1.3, "{c:?}");
    // The fitted predictions are what the error is computed on.
    let s = samples[10];
    let predicted = c.predict(s.agent, s.raw) as f64;
    assert!((predicted - s.recorded as f64).abs() / (s.recorded as f64) < 0.03);
    // It survives JSON (the app shows it, the library stores it); serde_json's float parsing
    // may lose the last bit, hence the tolerance.
    let json = serde_json::to_string(&c).unwrap();
    let back: tokens::Calibration = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (back.samples, back.agents.len()),
        (c.samples, c.agents.len())
    );
    assert!((back.p95_ape - c.p95_ape).abs() < 1e-9);
    assert_eq!(back.predict(1, 50_000), c.predict(1, 50_000));
}

fn message(agent: AgentIdx, role: Role, text: &str) -> Message {
    Message {
        agent,
        role,
        parts: vec![Part::Text { text: text.into() }],
        timestamp: None,
        flags: MessageFlags::default(),
        source: SourcePos::default(),
    }
}

#[test]
fn calibrate_session_fits_the_recorded_usage_of_a_session() {
    // Every call's recorded context = 5,000 hidden tokens + the heuristic count of its messages.
    let heuristic = tokens::counter("heuristic").unwrap();
    let mut s = Session {
        id: "synthetic".into(),
        agents: vec![Agent {
            id: "main".into(),
            name: "main".into(),
            ..Agent::default()
        }],
        ..Session::default()
    };
    let mut raw = 0;
    for i in 0..20 {
        let m = message(
            0,
            if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            &"word ".repeat(50 * (i + 1)),
        );
        raw += heuristic.count_message(&m);
        s.messages.push(m);
        s.calls.push(Call {
            agent: 0,
            context_end: s.messages.len(),
            reply: None,
            usage: Some(Usage {
                input: 100,
                cache_read: 5_000 + raw - 100,
                output: 50,
                ..Usage::default()
            }),
            model: None,
            timestamp: None,
            request_id: None,
            source: SourcePos::default(),
        });
    }
    let c = calibrate_session(&s, heuristic.as_ref()).unwrap();
    assert_eq!(c.samples, 20);
    assert!((c.session.overhead - 5_000.0).abs() < 1e-6, "{c:?}");
    assert!((c.session.ratio - 1.0).abs() < 1e-9, "{c:?}");
    assert_eq!(c.mean_ape, 0.0);
    // A usage-only session has nothing to count, hence nothing to calibrate.
    s.usage_only = true;
    assert!(calibrate_session(&s, heuristic.as_ref()).is_none());
}
