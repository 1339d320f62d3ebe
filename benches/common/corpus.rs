//! A Claude Code transcript of any size, generated at bench time (never committed).
//!
//! It has the shape of the real ones in ../shared/real-logs: one line per content block with the
//! usage repeated under the same `message.id`, thinking, text and tool_use blocks, tool results
//! that are numbered file listings (with Claude Code's `→`), progress / file-history-snapshot /
//! turn_duration entries, some non-ASCII text, growing cache reads, and an auto-compaction
//! (`compact_boundary` + `isCompactSummary`) whenever the context passes 150,000 tokens.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Bumped whenever the generator changes, so a cached corpus is regenerated.
pub const VERSION: u32 = 1;
pub const SESSION_ID: &str = "5b1e7c2a-0d4f-4b8e-9a61-3c2f8e9d1a70";
pub const MODEL: &str = "claude-sonnet-4-5-20250929";
const COMPACT_AT: u64 = 150_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64: fast, and good enough to vary content
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const PROSE: &[&str] = &[
    "The footstep synthesis reads the walk bob phase so each step lands on the downswing.",
    "I'll read the existing audio module first to see how the wind layer is routed.",
    "Crickets only sing at night, so the gain follows the sun elevation with a short fade.",
    "The PannerNode uses the HRTF model; distance falls off with the inverse model.",
    "Let me check whether the tests cover the chunk recycling when the player turns around.",
    "That error comes from the borrow of `state` living across the await point.",
    "Réglage fin: la latence passe de 40 ms à 12 ms après le changement — bien mieux.",
    "We keep the last 20 tool results verbatim and replace older ones with a one-line stub.",
    "配置文件里的阈值需要和测试保持一致，否则压缩会提前触发。",
    "The migration adds a `user_version` check so a newer database is refused, not reset.",
    "Numbers from the profiler: 1,284 allocations per frame, 96% of them in the mesh builder.",
    "Next I'll run the unit tests, then the integration suite against the sample sessions.",
];

const CODE: &[&str] = &[
    "export function createFootsteps(ctx, config) {",
    "  const gain = ctx.createGain();",
    "  gain.gain.value = config.FOOTSTEP_VOLUME ?? 0.35;",
    "  for (let i = 0; i < samples.length; i++) samples[i] = noise() * envelope(i / rate);",
    "  if (!player.isMoving || player.bobPhase < lastPhase) return;",
    "fn replay(session: &Session, strategy: &mut dyn Strategy) -> Result<Run> {",
    "    let mut context = Vec::with_capacity(session.messages.len());",
    "    for call in &session.calls {",
    "        context.extend(feed.advance(call));",
    "    }",
    "  // Terrain: meters per chunk side, vertices per side",
    "  CHUNK_SIZE: 32,",
    "def estimate_tokens(text: str) -> int:",
    "    return max(1, int(ascii_chars / 4.0 + non_ascii_chars / 1.5))",
    "SELECT id, path, hash FROM sessions WHERE format = ?1 ORDER BY imported_at DESC;",
    "}",
    "",
];

const PATHS: &[&str] = &[
    "/home/dev/forest/js/audio.js",
    "/home/dev/forest/js/movement.js",
    "/home/dev/forest/js/config.js",
    "/home/dev/ctxlab/src/replay/engine.rs",
    "/home/dev/ctxlab/src/tokens/mod.rs",
    "/home/dev/ctxlab/tests/formats.rs",
];

const COMMANDS: &[&str] = &[
    "cargo test --workspace 2>&1 | tail -20",
    "npm run build && npm test",
    "git diff --stat",
    "rg -n \"createPanner\" js/",
    "ls -la src/",
];

fn prose(rng: &mut Rng, sentences: u64) -> String {
    let mut s = String::new();
    for i in 0..sentences {
        if i > 0 {
            s.push(if rng.below(5) == 0 { '\n' } else { ' ' });
        }
        s.push_str(rng.pick(PROSE));
    }
    s
}

/// A numbered listing, the way Claude Code's Read tool returns a file.
fn listing(rng: &mut Rng, lines: u64) -> String {
    let mut s = String::with_capacity(lines as usize * 60);
    let start = 1 + rng.below(400);
    for n in start..start + lines {
        s.push_str(&format!("{n:>6}\u{2192}{}\n", rng.pick(CODE)));
    }
    s
}

fn json(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

struct Writer<W: Write> {
    out: W,
    rng: Rng,
    written: u64,
    seq: u64,
    /// Seconds since the corpus start.
    clock: u64,
    parent: String,
    /// Tokens in the context, as the simulated provider counts them.
    context: u64,
}

impl<W: Write> Writer<W> {
    fn uuid(&mut self) -> String {
        self.seq += 1;
        let r = self.rng.next();
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            self.seq as u32,
            (r >> 48) as u16,
            (r >> 36) & 0xfff,
            (r >> 24) & 0xfff,
            self.seq
        )
    }

    fn timestamp(&mut self) -> String {
        self.clock += 1 + self.rng.below(6);
        let (d, h, m, s) = (
            self.clock / 86_400,
            self.clock / 3600 % 24,
            self.clock / 60 % 60,
            self.clock % 60,
        );
        // Months of 28 days keep the dates valid without a calendar.
        let (month, day) = (1 + d / 28 % 12, 1 + d % 28);
        format!(
            "2026-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{:03}Z",
            self.rng.below(1000)
        )
    }

    fn line(&mut self, s: &str) -> std::io::Result<()> {
        self.out.write_all(s.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.written += s.len() as u64 + 1;
        Ok(())
    }

    fn envelope(&mut self, kind: &str, uuid: &str, parent: Option<&str>) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        let ts = self.timestamp();
        format!(
            "\"parentUuid\":{parent},\"isSidechain\":false,\"userType\":\"external\",\"cwd\":\"/home/dev/forest\",\"sessionId\":\"{SESSION_ID}\",\"version\":\"2.1.37\",\"gitBranch\":\"main\",\"type\":\"{kind}\",\"uuid\":\"{uuid}\",\"timestamp\":\"{ts}\""
        )
    }

    fn user(&mut self, content_json: &str, extra: &str) -> std::io::Result<()> {
        let uuid = self.uuid();
        let parent = self.parent.clone();
        let env = self.envelope("user", &uuid, Some(&parent));
        self.line(&format!(
            "{{{env}{extra},\"message\":{{\"role\":\"user\",\"content\":{content_json}}}}}"
        ))?;
        self.context += content_json.len() as u64 / 4;
        self.parent = uuid;
        Ok(())
    }

    /// One API call: each block on its own line, the same id and usage on every line.
    fn assistant(&mut self, blocks: &[String], output_tokens: u64) -> std::io::Result<()> {
        self.seq += 1;
        let id = format!("msg_01{:022x}", self.seq);
        let request = format!("req_011{:021x}", self.seq);
        let written: u64 = self.context / 8;
        let usage = format!(
            "{{\"input_tokens\":3,\"cache_creation_input_tokens\":{written},\"cache_read_input_tokens\":{},\"cache_creation\":{{\"ephemeral_5m_input_tokens\":{written},\"ephemeral_1h_input_tokens\":0}},\"output_tokens\":{output_tokens},\"service_tier\":\"standard\"}}",
            self.context - written
        );
        for block in blocks {
            let uuid = self.uuid();
            let parent = self.parent.clone();
            let env = self.envelope("assistant", &uuid, Some(&parent));
            self.line(&format!(
                "{{{env},\"message\":{{\"model\":\"{MODEL}\",\"id\":\"{id}\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{block}],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{usage}}},\"requestId\":\"{request}\"}}"
            ))?;
            self.parent = uuid;
        }
        self.context += output_tokens;
        Ok(())
    }

    fn compaction(&mut self) -> std::io::Result<()> {
        let uuid = self.uuid();
        let env = self.envelope("system", &uuid, None);
        let logical = self.parent.clone();
        let pre = self.context;
        self.line(&format!(
            "{{{env},\"subtype\":\"compact_boundary\",\"content\":\"Conversation compacted\",\"isMeta\":false,\"level\":\"info\",\"logicalParentUuid\":\"{logical}\",\"compactMetadata\":{{\"trigger\":\"auto\",\"preTokens\":{pre}}}}}"
        ))?;
        self.parent = uuid;
        self.context = 18_000;
        let summary = format!(
            "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n{}",
            prose(&mut self.rng, 30)
        );
        self.user(
            &json(&summary),
            ",\"isCompactSummary\":true,\"isVisibleInTranscriptOnly\":true",
        )
    }

    fn turn(&mut self) -> std::io::Result<()> {
        let uuid = self.uuid();
        let ts = self.timestamp();
        self.line(&format!(
            "{{\"type\":\"file-history-snapshot\",\"messageId\":\"{uuid}\",\"snapshot\":{{\"messageId\":\"{uuid}\",\"trackedFileBackups\":{{}},\"timestamp\":\"{ts}\"}},\"isSnapshotUpdate\":false}}"
        ))?;
        let n = 2 + self.rng.below(6);
        let prompt = prose(&mut self.rng, n);
        self.user(&json(&prompt), "")?;

        for _ in 0..2 + self.rng.below(6) {
            if self.context > COMPACT_AT {
                self.compaction()?;
            }
            let tool_id = format!("toolu_01{:022x}", self.rng.next() as u128 * 7);
            let (name, input) = match self.rng.below(3) {
                0 => (
                    "Read",
                    format!("{{\"file_path\":{}}}", json(self.rng.pick(PATHS))),
                ),
                1 => (
                    "Bash",
                    format!(
                        "{{\"command\":{},\"description\":\"Run the check\"}}",
                        json(self.rng.pick(COMMANDS))
                    ),
                ),
                _ => {
                    let (a, b) = (listing(&mut self.rng, 3), listing(&mut self.rng, 4));
                    (
                        "Edit",
                        format!(
                            "{{\"file_path\":{},\"old_string\":{},\"new_string\":{}}}",
                            json(self.rng.pick(PATHS)),
                            json(&a),
                            json(&b)
                        ),
                    )
                }
            };
            let n = 2 + self.rng.below(10);
            let thinking = prose(&mut self.rng, n);
            let n = 1 + self.rng.below(3);
            let text = prose(&mut self.rng, n);
            let blocks = [
                format!(
                    "{{\"type\":\"thinking\",\"thinking\":{},\"signature\":\"EqYCCkYICxgCKkB{:x}\"}}",
                    json(&thinking),
                    self.rng.next()
                ),
                format!("{{\"type\":\"text\",\"text\":{}}}", json(&text)),
                format!("{{\"type\":\"tool_use\",\"id\":\"{tool_id}\",\"name\":\"{name}\",\"input\":{input}}}"),
            ];
            let out = (thinking.len() + text.len() + input.len()) as u64 / 4;
            self.assistant(&blocks, out)?;

            let uuid = self.uuid();
            let parent = self.parent.clone();
            let env = self.envelope("progress", &uuid, Some(&parent));
            self.line(&format!(
                "{{{env},\"data\":{{\"type\":\"hook_progress\",\"hookEvent\":\"PostToolUse\",\"hookName\":\"PostToolUse:{name}\",\"command\":\"callback\"}},\"parentToolUseID\":\"{tool_id}\",\"toolUseID\":\"{tool_id}\"}}"
            ))?;

            let n = 20 + self.rng.below(180);
            let result = listing(&mut self.rng, n);
            let content = format!(
                "[{{\"tool_use_id\":\"{tool_id}\",\"type\":\"tool_result\",\"content\":{}}}]",
                json(&result)
            );
            self.user(&content, "")?;
        }
        let n = 1 + self.rng.below(5);
        let answer = prose(&mut self.rng, n);
        let block = format!("{{\"type\":\"text\",\"text\":{}}}", json(&answer));
        self.assistant(&[block], answer.len() as u64 / 4)?;

        let uuid = self.uuid();
        let parent = self.parent.clone();
        let env = self.envelope("system", &uuid, Some(&parent));
        let ms = 1000 + self.rng.below(200_000);
        self.line(&format!(
            "{{{env},\"subtype\":\"turn_duration\",\"durationMs\":{ms},\"isMeta\":false}}"
        ))
    }
}

/// Writes a transcript of at least `bytes` bytes (whole turns) to `path`; returns its size.
pub fn generate(path: &Path, bytes: u64, seed: u64) -> std::io::Result<u64> {
    let file = File::create(path)?;
    let mut w = Writer {
        out: BufWriter::with_capacity(1 << 20, file),
        rng: Rng(seed),
        written: 0,
        seq: 0,
        clock: 0,
        parent: "00000000-0000-4000-8000-000000000000".into(),
        context: 18_000,
    };
    while w.written < bytes {
        w.turn()?;
    }
    w.out.flush()?;
    Ok(w.written)
}

/// A corpus file under `dir`, generated once and reused while the generator and size are the
/// same. Laid out as a Claude config dir (`<dir>/projects/<project>/<session>.jsonl`) so that
/// ccusage reads it with `CLAUDE_CONFIG_DIR=<dir>`.
pub fn ensure(dir: &Path, bytes: u64) -> std::io::Result<std::path::PathBuf> {
    let project = dir.join("projects").join("-home-dev-forest");
    std::fs::create_dir_all(&project)?;
    let path = project.join(format!("{SESSION_ID}.jsonl"));
    let stamp = dir.join("corpus.version");
    let want = format!("{VERSION} {bytes}");
    let fresh = std::fs::read_to_string(&stamp).is_ok_and(|s| s == want) && path.exists();
    if !fresh {
        eprintln!(
            "generating {} MB of Claude Code transcript in {}",
            bytes / 1_000_000,
            path.display()
        );
        generate(&path, bytes, 0xC0FFEE ^ bytes)?;
        std::fs::write(&stamp, want)?;
    }
    Ok(path)
}
