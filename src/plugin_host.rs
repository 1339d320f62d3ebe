//! Strategy plugins: discovery, loading with `libloading`, ABI checks, and the safe wrapper the
//! replay engine calls.
//!
//! Invariants:
//! - a library is never unloaded: `Library` handles are leaked on purpose (unloading Rust cdylibs
//!   is unsound in practice: thread-locals and leaked statics would dangle);
//! - nothing crosses the boundary unchecked: statuses, op kinds, ranges and strings that come back
//!   from a plugin are copied and validated here or in `replay::validate`;
//! - a plugin's failure (error status, panic turned into a status) becomes `Error::Plugin` naming
//!   the plugin; the process keeps running.

use crate::error::{Error, Result};
use ctxlab_plugin_api::abi::*;
use ctxlab_plugin_api::sdk::{
    Event, EventKind, Line, Op, OpKind, ParamSpec, Role, Scope, Threshold, ThresholdKind,
};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod isolate;
pub use isolate::Isolation;

/// A loaded plugin: its table lives as long as the process.
pub struct LoadedPlugin {
    pub name: String,
    pub version: String,
    /// Where it was loaded from (`<in-process>` for tables linked into the binary).
    pub path: PathBuf,
    pub abi_minor: u32,
    table: &'static PluginTable,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("path", &self.path)
            .finish()
    }
}

/// What a strategy is, as its plugin describes it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StrategyMeta {
    pub id: String,
    pub title: String,
    pub system: String,
    pub description: String,
    pub params: Vec<ParamSpec>,
    pub export_formats: Vec<String>,
    pub plugin: String,
    pub plugin_version: String,
    pub path: PathBuf,
}

/// One strategy of a loaded plugin.
#[derive(Debug, Clone)]
pub struct StrategyEntry {
    pub meta: StrategyMeta,
    plugin: Arc<LoadedPlugin>,
    index: usize,
    /// Set: its instances run in a child process (`isolate`), not in this one.
    isolation: Option<Arc<Isolation>>,
}

/// A library that was found but not loaded, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Refusal {
    pub path: PathBuf,
    pub reason: String,
}

/// The first fields of every `PluginTable`, whatever its version: all the host may read before it
/// has checked `size`.
#[repr(C)]
struct TableHeader {
    abi_major: u32,
    abi_minor: u32,
    size: usize,
}

const _: () = {
    assert!(
        std::mem::offset_of!(PluginTable, abi_major)
            == std::mem::offset_of!(TableHeader, abi_major)
    );
    assert!(
        std::mem::offset_of!(PluginTable, abi_minor)
            == std::mem::offset_of!(TableHeader, abi_minor)
    );
    assert!(std::mem::offset_of!(PluginTable, size) == std::mem::offset_of!(TableHeader, size));
};

/// Text written by a plugin into host memory.
struct Buf(Vec<u8>);

unsafe extern "C" fn buf_write(ctx: *mut c_void, ptr: *const u8, len: usize) {
    if ctx.is_null() || ptr.is_null() || len == 0 {
        return;
    }
    let buf = &mut *(ctx as *mut Buf);
    buf.0
        .extend_from_slice(std::slice::from_raw_parts(ptr, len));
}

impl Buf {
    fn new() -> Buf {
        Buf(Vec::new())
    }
    fn writer(&mut self) -> HostWriter {
        HostWriter {
            ctx: self as *mut Buf as *mut c_void,
            write: buf_write,
        }
    }
    fn text(self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

/// More strategies than any plugin could mean: a table announcing more is corrupt.
const MAX_STRATEGIES: usize = 4096;

/// An ELF file's headers, program headers and section headers must lie inside the file, and so
/// must every segment's file bytes: `dlopen` maps them, and touching a page past the end of the
/// file kills the process with SIGBUS. Files that are not ELF are left to the loader to refuse.
fn check_elf(path: &Path) -> Result<(), String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    let size = f.metadata().map_err(|e| format!("cannot read: {e}"))?.len();
    let mut h = [0u8; 64];
    let n = f.read(&mut h).map_err(|e| format!("cannot read: {e}"))?;
    if n < 4 || &h[..4] != b"\x7fELF" {
        return Ok(());
    }
    let truncated = |what: &str| {
        Err(format!(
            "truncated ELF file ({size} bytes): its {what} lie past the end; rebuild or reinstall it"
        ))
    };
    let is64 = match h[4] {
        1 => false,
        2 => true,
        c => return Err(format!("ELF file of unknown class {c}")),
    };
    let le = match h[5] {
        1 => true,
        2 => false,
        d => return Err(format!("ELF file of unknown byte order {d}")),
    };
    let header_len = if is64 { 64 } else { 52 };
    if n < header_len {
        return truncated("header");
    }
    let rd = |b: &[u8], at: usize, len: usize| -> u64 {
        let mut v = 0u64;
        for i in 0..len {
            let byte = b[at + if le { len - 1 - i } else { i }] as u64;
            v = (v << 8) | byte;
        }
        v
    };
    let (phoff, shoff, phentsize, phnum, shentsize, shnum) = if is64 {
        (
            rd(&h, 32, 8),
            rd(&h, 40, 8),
            rd(&h, 54, 2),
            rd(&h, 56, 2),
            rd(&h, 58, 2),
            rd(&h, 60, 2),
        )
    } else {
        (
            rd(&h, 28, 4),
            rd(&h, 32, 4),
            rd(&h, 42, 2),
            rd(&h, 44, 2),
            rd(&h, 46, 2),
            rd(&h, 48, 2),
        )
    };
    let within = |off: u64, len: u64| off.checked_add(len).is_some_and(|end| end <= size);
    if !within(phoff, phentsize * phnum) {
        return truncated("program headers");
    }
    if shnum > 0 && !within(shoff, shentsize * shnum) {
        return truncated("section headers");
    }
    let ph_len = if is64 { 56 } else { 32 };
    if phnum > 0 && phentsize < ph_len {
        return Err(format!("ELF program header entries of {phentsize} bytes"));
    }
    let mut ph = vec![0u8; (phentsize * phnum) as usize];
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(phoff))
        .and_then(|_| f.read_exact(&mut ph))
        .map_err(|e| format!("cannot read: {e}"))?;
    for e in ph.chunks_exact(phentsize as usize) {
        let (off, filesz) = if is64 {
            (rd(e, 8, 8), rd(e, 32, 8))
        } else {
            (rd(e, 4, 4), rd(e, 16, 4))
        };
        // PT_LOAD: the segments that are mapped.
        if rd(e, 0, 4) == 1 && !within(off, filesz) {
            return truncated("loadable segments");
        }
    }
    Ok(())
}

unsafe fn str_of(s: StrRef) -> String {
    s.as_str().to_string()
}

/// The string if it is UTF-8, else its bytes written out (`b"fix\xffture"`) for the message.
unsafe fn utf8_of(s: StrRef) -> Result<String, String> {
    if s.ptr.is_null() || s.len == 0 {
        return Ok(String::new());
    }
    let bytes = std::slice::from_raw_parts(s.ptr, s.len.min(MAX_TEXT));
    std::str::from_utf8(bytes)
        .map(String::from)
        .map_err(|_| format!("b\"{}\"", bytes.escape_ascii()))
}

/// The baselines' ids (`replay::StrategySpec::None`, `Recorded`): a plugin strategy of that id
/// could never be chosen.
pub const BASELINE_IDS: &[&str] = &["none", "recorded"];

impl LoadedPlugin {
    /// Checks a table and wraps it. `path` is what error messages name.
    ///
    /// # Safety
    /// `table` must point to a table that lives for the rest of the process.
    pub unsafe fn from_table(
        table: *const PluginTable,
        path: &Path,
    ) -> Result<LoadedPlugin, String> {
        // Only the header is read before the size is known to cover the whole table: a short table
        // (a plugin built against an older or broken header) must not be read past its end.
        let h = (table as *const TableHeader)
            .as_ref()
            .ok_or_else(|| "the entry point returned no table".to_string())?;
        if h.abi_major != ABI_MAJOR {
            return Err(format!(
                "plugin ABI {}.{} but this ctxlab speaks ABI {}.{}: rebuild the plugin against ctxlab-plugin-api {}.x",
                h.abi_major, h.abi_minor, ABI_MAJOR, ABI_MINOR, ABI_MAJOR
            ));
        }
        // A table built for ABI 1.0 is exactly this size; a shorter one lacks entry points.
        if h.size < std::mem::size_of::<PluginTable>() {
            return Err(format!(
                "plugin table is {} bytes, ABI {}.{} needs at least {}",
                h.size,
                h.abi_major,
                h.abi_minor,
                std::mem::size_of::<PluginTable>()
            ));
        }
        // Every entry point must be there: a NULL one would crash at its first call. Read as
        // addresses, before the table is taken as a Rust value whose fn pointers cannot be null.
        let t = table as *const PluginTable;
        let fns = [
            ("create", std::ptr::addr_of!((*t).create) as *const usize),
            ("decide", std::ptr::addr_of!((*t).decide) as *const usize),
            (
                "thresholds",
                std::ptr::addr_of!((*t).thresholds) as *const usize,
            ),
            ("export", std::ptr::addr_of!((*t).export) as *const usize),
            ("import", std::ptr::addr_of!((*t).import) as *const usize),
            ("destroy", std::ptr::addr_of!((*t).destroy) as *const usize),
        ];
        for (name, f) in fns {
            if f.read() == 0 {
                return Err(format!("plugin table entry point {name} is NULL"));
            }
        }
        let t = &*table;
        if t.strategies_len > MAX_STRATEGIES {
            return Err(format!(
                "plugin table announces {} strategies; at most {MAX_STRATEGIES} are accepted",
                t.strategies_len
            ));
        }
        if !t.strategies.is_null() && !t.strategies.is_aligned() {
            return Err("plugin table's strategy array is misaligned".into());
        }
        Ok(LoadedPlugin {
            name: str_of(t.name),
            version: str_of(t.version),
            path: path.to_path_buf(),
            abi_minor: t.abi_minor,
            table: &*table,
        })
    }

    /// Loads a shared library and checks its table.
    pub fn load(path: &Path) -> Result<LoadedPlugin, String> {
        // A truncated library maps pages past its end: dlopen would die of SIGBUS.
        check_elf(path)?;
        // Safety: loading runs the library's initialisers; that is the contract of a plugin.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("not a loadable shared library: {e}"))?;
        let entry: Option<EntryFn> =
            unsafe { lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()).ok().map(|s| *s) };
        // Never unloaded, not even when refused (see the module docs): its initialisers have run.
        std::mem::forget(lib);
        let entry =
            entry.ok_or_else(|| format!("missing symbol {ENTRY_SYMBOL}: not a ctxlab plugin"))?;
        let table = unsafe { entry() };
        unsafe { LoadedPlugin::from_table(table, path) }
    }

    fn descs(&self) -> &'static [StrategyDesc] {
        let t = self.table;
        if t.strategies.is_null() || t.strategies_len == 0 {
            &[]
        } else {
            // Safety: the table and its descriptors live for the process (checked at load).
            unsafe { std::slice::from_raw_parts(t.strategies, t.strategies_len) }
        }
    }

    fn entry(self: &Arc<Self>, index: usize, d: &StrategyDesc) -> Result<StrategyEntry, String> {
        // Safety: descriptor strings are plugin-owned and live for the process.
        let (id, schema) = unsafe { (utf8_of(d.id), str_of(d.params_schema)) };
        // An id is how a user, a profile and a stored run name the strategy: never a lossy copy.
        let id = id.map_err(|bytes| {
            format!("strategy number {index} has an id that is not UTF-8 ({bytes})")
        })?;
        if id.is_empty() {
            return Err(format!("strategy number {index} has an empty id"));
        }
        if BASELINE_IDS.contains(&id.as_str()) {
            return Err(format!(
                "strategy id {id} is reserved for ctxlab's baseline of that name (the baseline would hide it)"
            ));
        }
        let params: Vec<ParamSpec> = if schema.trim().is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(&schema)
                .map_err(|e| format!("strategy {id}: parameter schema is not valid: {e}"))?
        };
        for p in &params {
            p.check_spec()
                .map_err(|e| format!("strategy {id}: parameter schema: {e}"))?;
        }
        let (title, system, description, formats) = unsafe {
            (
                str_of(d.title),
                str_of(d.system),
                str_of(d.description),
                str_of(d.export_formats),
            )
        };
        Ok(StrategyEntry {
            meta: StrategyMeta {
                id,
                title,
                system,
                description,
                params,
                export_formats: formats
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
                plugin: self.name.clone(),
                plugin_version: self.version.clone(),
                path: self.path.clone(),
            },
            plugin: Arc::clone(self),
            index,
            isolation: None,
        })
    }

    /// Every strategy the plugin describes, or the first reason one of them is unusable (empty id,
    /// malformed parameter schema, descriptor array missing).
    pub fn try_strategies(self: &Arc<Self>) -> Result<Vec<StrategyEntry>, String> {
        if self.table.strategies.is_null() && self.table.strategies_len > 0 {
            return Err(format!(
                "the table announces {} strategies but points to none",
                self.table.strategies_len
            ));
        }
        if self.table.strategies_len == 0 {
            return Err("the plugin exports no strategies".into());
        }
        let entries = self
            .descs()
            .iter()
            .enumerate()
            .map(|(i, d)| self.entry(i, d))
            .collect::<Result<Vec<_>, String>>()?;
        let mut seen = std::collections::HashSet::new();
        for e in &entries {
            if !seen.insert(e.meta.id.as_str()) {
                return Err(format!("strategy id {} is exported twice", e.meta.id));
            }
        }
        Ok(entries)
    }

    /// The strategies that describe themselves properly; `try_strategies` says why one does not.
    pub fn strategies(self: &Arc<Self>) -> Vec<StrategyEntry> {
        self.descs()
            .iter()
            .enumerate()
            .filter_map(|(i, d)| self.entry(i, d).ok())
            .collect()
    }
}

impl StrategyEntry {
    fn err(&self, message: impl Into<String>) -> Error {
        Error::Plugin {
            plugin: format!("{} ({})", self.meta.plugin, self.meta.id),
            message: message.into(),
        }
    }

    /// Creates an instance with these parameters (a JSON object; defaults fill the rest). The
    /// host checks them against the strategy's schema first (types, integer ranges, minimum and
    /// maximum, choices): a plugin never receives a value its schema does not allow.
    pub fn create(&self, params: &serde_json::Value) -> Result<Instance> {
        ctxlab_plugin_api::sdk::Params::resolve(&self.meta.params, params)
            .map_err(|e| self.err(e))?;
        if let Some(iso) = &self.isolation {
            let child =
                isolate::ChildInstance::start(self, iso, params).map_err(|e| self.err(e))?;
            return Ok(Instance {
                entry: self.clone(),
                backend: Backend::Child(Box::new(child)),
            });
        }
        let json = params.to_string();
        let mut err = Buf::new();
        let w = err.writer();
        let inst =
            unsafe { (self.plugin.table.create)(self.index, StrRef::new(&json), &w as *const _) };
        if inst.is_null() {
            let msg = err.text();
            return Err(self.err(if msg.is_empty() {
                "create failed without a message".to_string()
            } else {
                msg
            }));
        }
        Ok(Instance {
            entry: self.clone(),
            backend: Backend::InProcess(inst),
        })
    }

    /// This strategy with its instances run in a child process under `iso`'s limits.
    pub fn isolated(&self, iso: Isolation) -> StrategyEntry {
        StrategyEntry {
            isolation: Some(Arc::new(iso)),
            ..self.clone()
        }
    }

    /// Whether its instances run in a child process.
    pub fn is_isolated(&self) -> bool {
        self.isolation.is_some()
    }

    /// Parses a config file back into parameters.
    pub fn import(&self, format: &str, text: &str) -> Result<serde_json::Value> {
        let (mut out, mut err) = (Buf::new(), Buf::new());
        let (ow, ew) = (out.writer(), err.writer());
        let st = unsafe {
            (self.plugin.table.import)(self.index, StrRef::new(format), StrRef::new(text), &ow, &ew)
        };
        if st != STATUS_OK {
            return Err(self.err(err.text()));
        }
        serde_json::from_str(&out.text())
            .map_err(|e| self.err(format!("import returned invalid JSON: {e}")))
    }
}

/// A strategy instance for one replay; destroyed on drop.
pub struct Instance {
    entry: StrategyEntry,
    backend: Backend,
}

enum Backend {
    /// The plugin's instance pointer, in this process.
    InProcess(*mut c_void),
    /// An instance in a child process.
    Child(Box<isolate::ChildInstance>),
}

// The instance is used from one thread at a time; plugins are told instances are Send.
unsafe impl Send for Instance {}

/// A decision copied out of plugin memory.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct RawDecision {
    pub ops: Vec<Op>,
    pub events: Vec<Event>,
    pub gauges: Vec<(String, f64)>,
    /// Problems found while copying (unknown op kinds…): the engine rejects the decision.
    pub malformed: Vec<String>,
}

#[derive(Default)]
struct Collect<'c> {
    d: RawDecision,
    thresholds: Vec<Threshold>,
    /// The run's counter, offered to the plugin as `Sink::count_text` (ABI 1.1).
    counter: Option<&'c dyn crate::tokens::TokenCounter>,
    /// The call's messages, whose cuts `Sink::count_cut` counts (ABI 1.8).
    messages: &'c [MessageView],
    /// Where `Sink::count_cut` is answered from, when the caller keeps more than the views.
    cuts: Option<&'c dyn CutCounter>,
}

/// Answers `Sink::count_cut` (ABI 1.8) for a caller that knows more than the call's views: the
/// replay's context remembers what it counted of a message's earlier cuts.
pub trait CutCounter {
    /// Tokens of the text of message `i` cut to its first `head` and last `tail` bytes with
    /// `marker` between them; `None` when a cut is off a character boundary or they overlap.
    fn count_cut(&self, i: usize, head: u64, marker: &str, tail: u64) -> Option<u64>;
}

/// simdutf8's block: shorter strings are padded to it (`plugin_str`).
const SIMD_BLOCK: usize = 64;

/// A string a plugin hands the host, as `StrRef::as_str` reads it (up to its first byte that is
/// not UTF-8: a plugin written in C might send any bytes), checked with simdutf8: every edit text
/// of a decision crosses here, twice for LibreChat's (counted, then sent), and `from_utf8` was
/// 9 % of a LibreChat replay on text with a non-ASCII character every line.
///
/// # Safety
/// As `StrRef::as_str`: `s` points to `len` live bytes that outlive `'a` (or is null).
unsafe fn plugin_str<'a>(s: &StrRef) -> &'a str {
    if s.ptr.is_null() || s.len == 0 {
        return "";
    }
    let bytes = std::slice::from_raw_parts(s.ptr, s.len);
    // simdutf8 hands a string shorter than its 64-byte block to the standard check, which took
    // ~250 instructions for a LibreChat cut's marker (~57 bytes, two "…"), read twice a cut:
    // 4.5 % of "summarization on" (callgrind, 10k). Padded with NULs to one block, it is checked
    // by the SIMD code. NUL is ASCII, so the block is UTF-8 exactly when the string is (a
    // character cut short at the string's end is followed by a NUL, never a continuation byte).
    if bytes.len() < SIMD_BLOCK {
        let mut block = [0u8; SIMD_BLOCK];
        block[..bytes.len()].copy_from_slice(bytes);
        return match simdutf8::basic::from_utf8(&block) {
            Ok(_) => std::str::from_utf8_unchecked(bytes),
            Err(_) => s.as_str(),
        };
    }
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => text,
        // Rare: the standard check says where the valid text ends.
        Err(_) => s.as_str(),
    }
}

unsafe extern "C" fn count_text(ctx: *mut c_void, text: StrRef) -> u64 {
    match (ctx as *mut Collect).as_ref().and_then(|c| c.counter) {
        Some(counter) => counter.count_text(plugin_str(&text)),
        None => 0,
    }
}

unsafe extern "C" fn count_cut(
    ctx: *mut c_void,
    message: u64,
    head: u64,
    marker: StrRef,
    tail: u64,
) -> u64 {
    let Some(c) = (ctx as *mut Collect).as_ref() else {
        return u64::MAX;
    };
    if let Some(cuts) = c.cuts {
        let Some(i) = usize::try_from(message)
            .ok()
            .filter(|&i| i < c.messages.len())
        else {
            return u64::MAX;
        };
        return cuts
            .count_cut(i, head, plugin_str(&marker), tail)
            .unwrap_or(u64::MAX);
    }
    let (Some(counter), Some(m)) = (
        c.counter,
        usize::try_from(message)
            .ok()
            .and_then(|i| c.messages.get(i)),
    ) else {
        return u64::MAX;
    };
    // The host's own text (made by the host, valid UTF-8).
    let text = m.text.as_host_str();
    match crate::replay::cut_pieces(text, head, tail) {
        Some((h, t)) => counter.count_pieces(&[h, plugin_str(&marker), t]),
        None => u64::MAX,
    }
}

/// Events (or gauges, thresholds) one answer may hold; ops are capped at `replay::MAX_OPS`.
pub const MAX_EVENTS: usize = 65_536;
/// Bytes of one string a plugin hands over (a summary, marker, event message).
pub const MAX_TEXT: usize = 16 << 20;

/// A plugin's answer is copied only up to the caps: past one, the first excess is recorded as
/// malformed (the engine rejects the decision) and the rest is not read, so a runaway plugin
/// cannot exhaust the host's memory.
fn over_cap(malformed: &mut Vec<String>, what: &str, have: usize, max: usize) -> bool {
    if have < max {
        return false;
    }
    if have == max && !malformed.iter().any(|m| m.starts_with("more than")) {
        malformed.push(format!("more than {max} {what} in one answer"));
    }
    true
}

fn text_over_cap(malformed: &mut Vec<String>, s: &StrRef) -> bool {
    if s.len <= MAX_TEXT {
        return false;
    }
    malformed.push(format!(
        "a string of {} bytes; at most {MAX_TEXT} are accepted",
        s.len
    ));
    true
}

unsafe extern "C" fn push_op(ctx: *mut c_void, op: *const EditOp) {
    let (Some(c), Some(op)) = ((ctx as *mut Collect).as_mut(), op.as_ref()) else {
        return;
    };
    if over_cap(
        &mut c.d.malformed,
        "ops",
        c.d.ops.len(),
        crate::replay::MAX_OPS,
    ) || text_over_cap(&mut c.d.malformed, &op.text)
    {
        return;
    }
    let text = plugin_str(&op.text).to_string();
    let scope = match op.scope {
        SCOPE_PERSISTENT => Scope::Persistent,
        SCOPE_THIS_CALL => Scope::ThisCall,
        other => {
            c.d.malformed.push(format!("op with unknown scope {other}"));
            return;
        }
    };
    let kind = match op.kind {
        OP_DROP => OpKind::Drop,
        OP_SUMMARIZE => OpKind::Summarize {
            role: Role::from_abi(op.role),
            max_tokens: op.summary_max_tokens,
            summarizer_input_tokens: op.summarizer_input_tokens,
            text,
        },
        OP_TRUNCATE => OpKind::Truncate {
            head: op.head_chars,
            tail: op.tail_chars,
            marker: text,
        },
        OP_MASK => OpKind::Mask { placeholder: text },
        OP_CUT => OpKind::Cut {
            head: op.head_chars,
            tail: op.tail_chars,
            marker: text,
        },
        OP_OFFLOAD => OpKind::Offload { stub: text },
        OP_PIN => OpKind::Pin,
        OP_UNPIN => OpKind::Unpin,
        OP_ALLOW_SPLIT => OpKind::AllowSplit,
        OP_REPEAT => OpKind::Repeat,
        OP_DROP_RESULTS => match OpKind::parse_drop_results(&text) {
            Ok(k) => k,
            Err(e) => {
                c.d.malformed.push(e);
                return;
            }
        },
        other => {
            c.d.malformed.push(format!("unknown op kind {other}"));
            return;
        }
    };
    c.d.ops.push(Op {
        kind,
        scope,
        start: op.start.min(usize::MAX as u64) as usize,
        end: op.end.min(usize::MAX as u64) as usize,
    });
}

unsafe extern "C" fn push_event(ctx: *mut c_void, ev: *const EventView) {
    let (Some(c), Some(ev)) = ((ctx as *mut Collect).as_mut(), ev.as_ref()) else {
        return;
    };
    if over_cap(&mut c.d.malformed, "events", c.d.events.len(), MAX_EVENTS)
        || text_over_cap(&mut c.d.malformed, &ev.code)
        || text_over_cap(&mut c.d.malformed, &ev.message)
    {
        return;
    }
    c.d.events.push(Event {
        kind: EventKind::from_abi(ev.kind),
        code: plugin_str(&ev.code).to_string(),
        message: plugin_str(&ev.message).to_string(),
        tokens_before: ev.tokens_before,
        tokens_after: ev.tokens_after,
    });
}

unsafe extern "C" fn push_gauge(ctx: *mut c_void, name: StrRef, value: f64) {
    if let Some(c) = (ctx as *mut Collect).as_mut() {
        if over_cap(&mut c.d.malformed, "gauges", c.d.gauges.len(), MAX_EVENTS)
            || text_over_cap(&mut c.d.malformed, &name)
        {
            return;
        }
        c.d.gauges.push((name.as_str().to_string(), value));
    }
}

unsafe extern "C" fn push_threshold(ctx: *mut c_void, th: *const ThresholdView) {
    let (Some(c), Some(th)) = ((ctx as *mut Collect).as_mut(), th.as_ref()) else {
        return;
    };
    c.thresholds.push(Threshold {
        kind: match th.kind {
            THRESHOLD_WARN => ThresholdKind::Warn,
            THRESHOLD_CUTOVER => ThresholdKind::Cutover,
            _ => ThresholdKind::Trigger,
        },
        line: match th.line {
            LINE_CUMULATIVE_SINCE_COMPACTION => Line::CumulativeSinceCompaction,
            LINE_CUMULATIVE => Line::Cumulative,
            _ => Line::Occupancy,
        },
        tokens: th.tokens,
        label: th.label.as_str().to_string(),
    });
}

fn sink(c: &mut Collect) -> Sink {
    let count = c.counter.is_some();
    Sink {
        ctx: c as *mut Collect as *mut c_void,
        push_op,
        push_event,
        push_gauge,
        push_threshold,
        count_text: count.then_some(count_text as _),
        count_cut: count.then_some(count_cut as _),
    }
}

impl Instance {
    pub fn meta(&self) -> &StrategyMeta {
        &self.entry.meta
    }

    /// Asks for a decision. The views in `call` must stay valid for the duration of the call.
    pub fn decide(&mut self, call: &CallView) -> Result<RawDecision> {
        self.decide_counted(call, None, None)
    }

    /// [`Instance::decide`], offering the plugin the run's token counter (`Sink::count_text`).
    /// `cuts`: where `Sink::count_cut` is answered from (else from `counter` and the views).
    pub fn decide_counted(
        &mut self,
        call: &CallView,
        counter: Option<&dyn crate::tokens::TokenCounter>,
        cuts: Option<&dyn CutCounter>,
    ) -> Result<RawDecision> {
        let ptr = match &mut self.backend {
            Backend::InProcess(p) => *p,
            Backend::Child(c) => return c.decide(call, counter).map_err(|e| self.entry.err(e)),
        };
        let messages = if call.messages.is_null() || call.messages_len == 0 {
            &[][..]
        } else {
            // SAFETY: the caller keeps the call's views valid for the call.
            unsafe { std::slice::from_raw_parts(call.messages, call.messages_len) }
        };
        let mut c = Collect {
            counter,
            messages,
            cuts,
            ..Collect::default()
        };
        let s = sink(&mut c);
        let mut err = Buf::new();
        let ew = err.writer();
        let st = unsafe { (self.entry.plugin.table.decide)(ptr, call, &s, &ew) };
        match st {
            STATUS_OK => Ok(c.d),
            _ => {
                let msg = err.text();
                Err(self.entry.err(if msg.is_empty() {
                    format!("decide returned status {st} without a message")
                } else {
                    msg
                }))
            }
        }
    }

    pub fn thresholds(&mut self) -> Vec<Threshold> {
        let ptr = match &mut self.backend {
            Backend::InProcess(p) => *p,
            Backend::Child(c) => return c.thresholds(),
        };
        let mut c = Collect::default();
        let s = sink(&mut c);
        let st = unsafe { (self.entry.plugin.table.thresholds)(ptr, &s) };
        if st == STATUS_OK {
            c.thresholds
        } else {
            Vec::new()
        }
    }

    /// The parameters as the target system's config file.
    pub fn export(&mut self, format: &str) -> Result<String> {
        let ptr = match &mut self.backend {
            Backend::InProcess(p) => *p,
            Backend::Child(c) => return c.export(format).map_err(|e| self.entry.err(e)),
        };
        let (mut out, mut err) = (Buf::new(), Buf::new());
        let (ow, ew) = (out.writer(), err.writer());
        let st = unsafe { (self.entry.plugin.table.export)(ptr, StrRef::new(format), &ow, &ew) };
        if st != STATUS_OK {
            return Err(self.entry.err(err.text()));
        }
        Ok(out.text())
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // A child instance ends with its process (`ChildInstance`'s own drop).
        if let Backend::InProcess(ptr) = self.backend {
            unsafe { (self.entry.plugin.table.destroy)(ptr) }
        }
    }
}

/// Why a folder is searched for plugins (shown by `ctxlab plugins`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Named in `CTXLAB_PLUGIN_PATH`.
    EnvVar,
    /// The `plugins` folder beside the executable (an installed ctxlab).
    BesideExecutable,
    /// `<user data folder>/ctxlab/plugins`.
    UserData,
    /// The system folder a package installs the built-in strategies into: `lib/ctxlab/plugins`
    /// beside the `bin` folder holding the executable (`/usr/lib/ctxlab/plugins` for the .deb).
    System,
    /// `target/<profile>/` of the development checkout the executable was built in.
    Checkout,
}

/// One place discovery looks, in search order.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SearchDir {
    pub path: PathBuf,
    pub origin: Origin,
}

/// The environment variable that puts folders (or single library files) first in the search.
pub const PLUGIN_PATH_VAR: &str = "CTXLAB_PLUGIN_PATH";

/// Where `Registry::discover` looks, in order: `CTXLAB_PLUGIN_PATH`, beside the executable, the
/// user data folder, the system folder, and the checkout's `target/<profile>/`. An earlier place
/// wins a strategy id, so a user's own build of a strategy overrides the packaged one.
pub fn search_path() -> Vec<SearchDir> {
    let mut dirs = Vec::new();
    if let Some(v) = std::env::var_os(PLUGIN_PATH_VAR) {
        dirs.extend(
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .map(|path| SearchDir {
                    path,
                    origin: Origin::EnvVar,
                }),
        );
    }
    let exe = std::env::current_exe().ok();
    if let Some(dir) = exe.as_deref().and_then(Path::parent) {
        dirs.push(SearchDir {
            path: dir.join("plugins"),
            origin: Origin::BesideExecutable,
        });
    }
    if let Some(data) = dirs::data_dir() {
        dirs.push(SearchDir {
            path: data.join("ctxlab").join("plugins"),
            origin: Origin::UserData,
        });
    }
    if let Some(dir) = exe.as_deref().and_then(system_dir) {
        dirs.push(SearchDir {
            path: dir,
            origin: Origin::System,
        });
    }
    if let Some(dir) = exe.as_deref().and_then(checkout_dir) {
        dirs.push(SearchDir {
            path: dir,
            origin: Origin::Checkout,
        });
    }
    dirs
}

/// `<prefix>/lib/ctxlab/plugins` when `exe` sits in `<prefix>/bin` (a package's `/usr/bin`, a
/// `cargo install` root, or a package unpacked into a throwaway root): relative to the
/// executable, so an unpacked package finds its own plugins and never the machine's.
pub fn system_dir(exe: &Path) -> Option<PathBuf> {
    let bin = exe.parent()?;
    (bin.file_name()? == "bin").then(|| bin.parent().unwrap_or(bin).join("lib/ctxlab/plugins"))
}

/// `target/<profile>/` when `exe` was built by cargo in a checkout: `target/debug/ctxlab` and
/// test binaries in `target/debug/deps/` both give `target/debug`. Cargo marks its target folder
/// with `CACHEDIR.TAG` (also under `--target <triple>`, one level further down).
pub fn checkout_dir(exe: &Path) -> Option<PathBuf> {
    let mut dir = exe.parent()?;
    if matches!(
        dir.file_name().and_then(|n| n.to_str()),
        Some("deps" | "examples")
    ) {
        dir = dir.parent()?;
    }
    dir.ancestors()
        .skip(1)
        .take(2)
        .any(|a| a.join("CACHEDIR.TAG").is_file())
        .then(|| dir.to_path_buf())
}

/// A shared library that discovery of a folder picks up: `*ctxlab_plugin_*.{so,dylib,dll}`.
/// Fixture plugins (`ctxlab_fixture_*`) are left alone; tests load them by path.
pub fn is_plugin_file_name(name: &str) -> bool {
    let ext_ok = Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "so" | "dylib" | "dll"));
    ext_ok && name.contains("ctxlab_plugin_")
}

/// Every strategy found, and every library that was refused with the reason.
#[derive(Debug, Default)]
pub struct Registry {
    searched: Vec<SearchDir>,
    plugins: Vec<Arc<LoadedPlugin>>,
    strategies: Vec<StrategyEntry>,
    refused: Vec<Refusal>,
    /// Canonical paths (and table addresses for in-process plugins) already seen: the same file
    /// reached twice (symlink, folder listed twice) is loaded once.
    seen: std::collections::HashSet<PathBuf>,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl Registry {
    /// An empty registry (tests and embedders add plugins explicitly).
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Searches the standard places (see [`search_path`]).
    pub fn discover() -> Registry {
        Registry::discover_in(&search_path())
    }

    /// Searches these places in order.
    pub fn discover_in(dirs: &[SearchDir]) -> Registry {
        let mut r = Registry::new();
        for d in dirs {
            r.search(d);
        }
        r
    }

    fn search(&mut self, d: &SearchDir) {
        self.searched.push(d.clone());
        let explicit = d.origin == Origin::EnvVar;
        if d.path.is_file() {
            // A file named in CTXLAB_PLUGIN_PATH is loaded whatever its name.
            let _ = self.load_path(&d.path);
            return;
        }
        let entries = match std::fs::read_dir(&d.path) {
            Ok(e) => e,
            Err(e) => {
                // Only a place the user named is worth a complaint; the defaults often don't exist.
                if explicit {
                    self.refused.push(Refusal {
                        path: d.path.clone(),
                        reason: format!("named in {PLUGIN_PATH_VAR} but cannot be read: {e}"),
                    });
                }
                return;
            }
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(is_plugin_file_name)
            })
            .collect();
        files.sort();
        for f in files {
            // Named like a plugin but not a library file: said, not skipped in silence.
            let not_a_file = match std::fs::metadata(&f) {
                Ok(m) if m.is_file() => None,
                Ok(m) if m.is_dir() => Some("a folder, not a library file".to_string()),
                Ok(_) => Some("not a regular file (a FIFO, socket or device)".to_string()),
                Err(_) if f.is_symlink() => Some(format!(
                    "a symbolic link to {}, which does not exist",
                    std::fs::read_link(&f)
                        .map(|t| t.display().to_string())
                        .unwrap_or_else(|_| "?".into())
                )),
                Err(e) => Some(format!("cannot be read: {e}")),
            };
            match not_a_file {
                None => {
                    let _ = self.load_path(&f);
                }
                Some(reason) => self.refused.push(Refusal { path: f, reason }),
            }
        }
    }

    /// Loads one library. `Ok(n)`: `n` strategies were added (0 when this file was already
    /// loaded). A refusal is also kept in [`Registry::refused`].
    pub fn load_path(&mut self, path: &Path) -> std::result::Result<usize, Refusal> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if !self.seen.insert(key) {
            return Ok(0);
        }
        let loaded = LoadedPlugin::load(path);
        self.admit(path, loaded)
    }

    /// Registers a plugin table linked into this binary (a plugin crate's `plugin_table()`), as if
    /// it had been loaded from a library; `label` stands in for the path in messages.
    pub fn add_in_process(
        &mut self,
        table: &'static PluginTable,
        label: &str,
    ) -> std::result::Result<usize, Refusal> {
        let key = PathBuf::from(format!("<in-process {:p}>", table as *const PluginTable));
        if !self.seen.insert(key) {
            return Ok(0);
        }
        let path = PathBuf::from(format!("<in-process: {label}>"));
        // Safety: the table is 'static.
        let loaded = unsafe { LoadedPlugin::from_table(table, &path) };
        self.admit(&path, loaded)
    }

    fn admit(
        &mut self,
        path: &Path,
        loaded: Result<LoadedPlugin, String>,
    ) -> std::result::Result<usize, Refusal> {
        let checked = loaded.and_then(|p| {
            let p = Arc::new(p);
            let entries = p
                .try_strategies()
                .map_err(|e| format!("plugin {}: {e}", p.name))?;
            // The first place in the search order keeps an id; a later copy is refused whole, so
            // a half-loaded plugin never mixes with another build of itself.
            for e in &entries {
                if let Some(first) = self.find(&e.meta.id) {
                    return Err(format!(
                        "plugin {}: strategy id {} is already provided by plugin {} {} ({})",
                        p.name,
                        e.meta.id,
                        first.meta.plugin,
                        first.meta.plugin_version,
                        first.meta.path.display()
                    ));
                }
            }
            Ok((p, entries))
        });
        match checked {
            Ok((p, entries)) => {
                let n = entries.len();
                self.plugins.push(p);
                self.strategies.extend(entries);
                Ok(n)
            }
            Err(reason) => {
                let r = Refusal {
                    path: path.to_path_buf(),
                    reason,
                };
                self.refused.push(r.clone());
                Err(r)
            }
        }
    }

    /// The places searched, in order.
    pub fn searched(&self) -> &[SearchDir] {
        &self.searched
    }

    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }

    /// Every strategy, in discovery order.
    pub fn strategies(&self) -> &[StrategyEntry] {
        &self.strategies
    }

    pub fn find(&self, id: &str) -> Option<&StrategyEntry> {
        self.strategies.iter().find(|s| s.meta.id == id)
    }

    /// Like `find`, with an error a user can act on: the known ids and where to look for more.
    pub fn require(&self, id: &str) -> Result<&StrategyEntry> {
        self.find(id).ok_or_else(|| {
            let known: Vec<&str> = self.strategies.iter().map(|s| s.meta.id.as_str()).collect();
            let mut msg = format!(
                "unknown strategy {id}; known strategies: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
            if !self.refused.is_empty() {
                msg.push_str(&format!(
                    "; {} plugin librar{} refused (run `ctxlab plugins` to see why)",
                    self.refused.len(),
                    if self.refused.len() == 1 {
                        "y was"
                    } else {
                        "ies were"
                    }
                ));
            }
            Error::Invalid(msg)
        })
    }

    /// Libraries found but not loaded, with the reason.
    pub fn refused(&self) -> &[Refusal] {
        &self.refused
    }

    /// From now on, every strategy of the registry runs in a child process under `iso`'s limits
    /// (`--isolate`): for plugins the user does not trust.
    pub fn isolate(&mut self, iso: Isolation) {
        for s in &mut self.strategies {
            s.isolation = Some(Arc::new(iso.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `plugin_str` reads what `StrRef::as_str` reads (the standard check: up to the first byte
    /// that is not UTF-8) at every length around simdutf8's block, the padded short strings
    /// included: whole and cut-short characters of 1–4 bytes, stray continuation bytes, 0xFF.
    #[test]
    fn plugin_strings_read_as_the_standard_check_reads_them() {
        let pieces: [&[u8]; 10] = [
            b"a",
            b"\n",
            "\u{e9}".as_bytes(),
            "\u{2026}".as_bytes(),
            "\u{1F600}".as_bytes(),
            &[0xE2, 0x80],
            &[0xF0, 0x9F, 0x98],
            &[0x80],
            &[0xFF],
            &[0],
        ];
        let mut rng = ctxlab_plugin_api::testing::Rng(17);
        let (mut short_invalid, mut short_valid) = (0, 0);
        for round in 0..20_000 {
            let mut bytes = Vec::new();
            let want = rng.below(140) as usize;
            while bytes.len() < want {
                // Mostly valid text, so that long valid strings are drawn too.
                let k = if rng.chance(97) {
                    rng.below(5)
                } else {
                    rng.below(10)
                };
                bytes.extend_from_slice(pieces[k as usize]);
            }
            if round % 3 == 0 {
                bytes.truncate(want);
            }
            let s = StrRef {
                ptr: bytes.as_ptr(),
                len: bytes.len(),
            };
            let (got, expected) = unsafe { (plugin_str(&s), s.as_str()) };
            assert_eq!(got.as_bytes(), expected.as_bytes(), "{bytes:?}");
            if bytes.len() < SIMD_BLOCK {
                match std::str::from_utf8(&bytes) {
                    Ok(_) => short_valid += 1,
                    Err(_) => short_invalid += 1,
                }
            }
        }
        assert!(
            short_valid > 1000 && short_invalid > 1000,
            "{short_valid} / {short_invalid}"
        );
    }
}
