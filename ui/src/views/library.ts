// Library: the sessions open now, the sessions opened before (the SQLite library, with what moved
// or changed), opening more (dialog, drop, a typed path), the logs agent tools left on this
// machine, and what failed to load and why.

import { open } from "@tauri-apps/plugin-dialog";
import { api } from "../api";
import type { LogFile } from "../bindings/LogFile";
import type { StoredSession } from "../bindings/StoredSession";
import { storedNote } from "../stored";
import { clear, empty, errorBox, h } from "../dom";
import { fmtBytes, fmtDate, fmtInt } from "../format";
import { changed, store } from "../store";

let discovered: LogFile[] | null = null;
let discoverError: string | null = null;

export async function openPaths(paths: string[]) {
  for (const path of paths) {
    store.status = `Opening ${path}…`;
    changed();
    try {
      const r = await api.openPath(path);
      store.library = await api.library();
      await refreshStored();
      store.openErrors = [...r.failed, ...store.openErrors];
      if (r.sessions.length > 0) {
        await selectSession(r.sessions[0].key);
      }
      store.status = `Opened ${r.sessions.length} session${r.sessions.length === 1 ? "" : "s"} from ${path}` + (r.failed.length ? `; ${r.failed.length} file(s) could not be read` : "");
    } catch (e) {
      store.openErrors = [e as { code: string; message: string }, ...store.openErrors];
      store.status = `Could not open ${path}`;
    }
    changed();
  }
}

/** Re-reads the SQLite library's list (it hashes the logs, so only after something changed). */
export async function refreshStored() {
  try {
    const listed = await api.storedSessions();
    store.stored = listed.sessions;
    store.storedSkipped = listed.skipped;
  } catch (e) {
    store.openErrors = [e as { code: string; message: string }, ...store.openErrors];
  }
  changed();
}

async function openStored(s: StoredSession) {
  if (s.status === "changed") return openPaths([s.path]);
  store.status = `Opening ${s.path}…`;
  changed();
  try {
    const opened = await api.openStored(s.id);
    store.library = await api.library();
    await refreshStored();
    await selectSession(opened.key);
    store.status = `Opened ${s.name} from the library`;
    go("session");
  } catch (e) {
    store.openErrors = [e as { code: string; message: string }, ...store.openErrors];
    store.status = `Could not open ${s.path}`;
  }
  changed();
}

export async function selectSession(key: number) {
  store.current = key;
  store.detail = null;
  store.runs = [];
  changed();
  try {
    store.detail = await api.sessionDetail(key);
    void store.benchStartup.then((on) => on && api.startupMark("detail-received"));
  } catch (e) {
    store.openErrors = [e as { code: string; message: string }, ...store.openErrors];
  }
  changed();
}

export async function openFileDialog(directory: boolean) {
  const picked = await open({ multiple: true, directory, title: directory ? "Open a folder of logs" : "Open session logs" });
  if (!picked) return;
  await openPaths(Array.isArray(picked) ? picked : [picked]);
}

async function discover() {
  try {
    discovered = await api.discoverLogs();
  } catch (e) {
    discoverError = (e as { message: string }).message;
  }
  changed();
}

export function renderLibrary(root: HTMLElement) {
  if (discovered === null && discoverError === null) void discover();
  const pathInput = h("input.path", { type: "text", placeholder: "/path/to/session.jsonl or a folder", testid: "open-path-input", spellcheck: false });
  const openTyped = () => {
    const p = pathInput.value.trim();
    if (p) void openPaths([p]);
  };
  pathInput.addEventListener("keydown", (e) => {
    if (e.key === "Enter") openTyped();
  });

  const sessions = store.library.sessions;
  const table = sessions.length
    ? h(
        "table.grid",
        { testid: "sessions" },
        h("thead", {}, h("tr", {}, ...["Session", "Format", "Agents", "Calls", "Recorded input", "Peak context", "Model", "Size", ""].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          sessions.map((s) =>
            h(
              "tr",
              { class: s.key === store.current ? "selected clickable" : "clickable", onclick: () => void selectSession(s.key).then(() => go("session")) },
              h("td", { title: s.path }, h("div", { title: s.id }, s.name), h("div.muted.small", {}, s.path)),
              h("td", {}, s.format, s.usage_only ? h("span.badge", { title: "Token counts without text: it charts, it cannot be replayed" }, "usage only") : null, s.estimate_only ? h("span.badge", { title: "Output tokens only: every input count is ctxlab's estimate, uncalibrated" }, "estimate only") : null),
              h("td.num", {}, fmtInt(s.agents)),
              h("td.num", {}, fmtInt(s.calls)),
              h("td.num", {}, fmtInt(s.recorded_input)),
              h("td.num", {}, fmtInt(s.peak_context)),
              h("td", {}, s.model ?? "—"),
              h("td.num", {}, fmtBytes(s.bytes)),
              h(
                "td",
                {},
                s.warning_count ? h("span.badge.warn", { title: s.warnings.map((w) => `${w.file}:${w.line}: ${w.message}`).join("\n") }, `${fmtInt(s.warning_count)} warning${s.warning_count === 1 ? "" : "s"}`) : null,
                h(
                  "button.ghost",
                  {
                    title: "Close",
                    onclick: async (e: Event) => {
                      e.stopPropagation();
                      await api.closeSession(s.key);
                      store.library = await api.library();
                      await refreshStored();
                      if (store.current === s.key) {
                        store.current = null;
                        store.detail = null;
                        store.runs = [];
                      }
                      changed();
                    },
                  },
                  "×",
                ),
              ),
            ),
          ),
        ),
      )
    : empty("No session open yet", "Open a log with the buttons above (Ctrl+O), drop files or folders on the window, or pick one of the logs found on this machine below.");

  const stored = store.stored.length
    ? h(
        "table.grid",
        { testid: "stored" },
        h("thead", {}, h("tr", {}, ...["Session", "Format", "Agents", "Calls", "Compactions", "Model", "Size", "Imported", "Runs", "Log"].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          store.stored.map((s) => {
            const note = storedNote(s);
            return h(
              "tr",
              { class: note.openable ? "clickable" : "unavailable", title: note.hint, onclick: note.openable ? () => void openStored(s) : undefined },
              h("td", { title: s.path }, h("div", { title: s.session_key }, s.name), h("div.muted.small", {}, s.path)),
              h("td", {}, s.format, s.usage_only ? h("span.badge", {}, "usage only") : null),
              h("td.num", {}, fmtInt(s.agents)),
              h("td.num", {}, fmtInt(s.calls)),
              h("td.num", {}, fmtInt(s.compactions)),
              h("td", {}, s.model ?? "—"),
              h("td.num", {}, fmtBytes(s.bytes)),
              h("td", {}, fmtDate(s.imported_at)),
              h("td.num", {}, fmtInt(s.runs)),
              h("td", {}, h(`span.badge.${note.tone}`, { testid: `stored-status-${s.status}` }, note.label)),
            );
          }),
        ),
      )
    : empty("The library is empty", "Every log you open is recorded here, so it is one click away next time.");

  // Library rows that did not read back: named, never silently missing from the list.
  const skipped = store.storedSkipped.length
    ? h("section", { testid: "stored-skipped" }, h("h3", {}, `${store.storedSkipped.length} library row${store.storedSkipped.length === 1 ? "" : "s"} left out`), store.storedSkipped.map((m) => errorBox(m, "library")))
    : null;

  const failures = [...store.openErrors, ...store.library.failed.filter((f) => !store.openErrors.some((o) => o.message === f.message))];
  const failed = failures.length
    ? h("section", { testid: "load-errors" }, h("h3", {}, "Could not load"), failures.map((f) => errorBox(f.message, f.code)))
    : null;

  const found = discovered === null
    ? h("div.muted", {}, discoverError ?? "Looking for logs in the default folders of Claude Code, Codex, Gemini CLI, OpenCode, Copilot CLI, Cline, Roo Code and Kilo Code…")
    : discovered.length === 0
      ? empty("No local logs found", "Claude Code keeps its logs in ~/.claude/projects, Codex CLI in ~/.codex/sessions, Gemini CLI in ~/.gemini/tmp, OpenCode in ~/.local/share/opencode, Copilot CLI in ~/.copilot/session-state, Cline, Roo Code and Kilo Code in VS Code's global storage.")
      : h(
          "table.grid",
          { testid: "discovered" },
          h("thead", {}, h("tr", {}, h("th", {}, "Log"), h("th", {}, "Tool"), h("th", {}, "Size"), h("th", {}, "Modified"))),
          h(
            "tbody",
            {},
            discovered.slice(0, 500).map((f) =>
              h(
                "tr.clickable",
                { onclick: () => void openPaths([f.path]), title: "Open" },
                h("td.path-cell", {}, f.path),
                h("td", {}, f.tool),
                h("td.num", {}, fmtBytes(f.bytes)),
                h("td", {}, fmtDate(f.modified_ms)),
              ),
            ),
          ),
        );

  clear(
    root,
    h(
      "div.toolbar",
      {},
      h("button.primary", { onclick: () => void openFileDialog(false), title: "Ctrl+O" }, "Open log…"),
      h("button", { onclick: () => void openFileDialog(true), title: "Ctrl+Shift+O" }, "Open folder…"),
      pathInput,
      h("button", { onclick: openTyped, testid: "open-path-button" }, "Open path"),
    ),
    h("div.drop-hint.muted", {}, "Drop session logs or folders anywhere on the window."),
    failed,
    h("h2", {}, "Open sessions"),
    table,
    h("h2", {}, "Library (opened before)"),
    stored,
    skipped,
    h("h2", {}, "Logs on this machine"),
    found,
  );
}

let go: (v: "session") => void = () => {};
export function setNavigator(f: (v: "session") => void) {
  go = f;
}
