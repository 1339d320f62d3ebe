import { describe, expect, it } from "vitest";
import type { StoredSession } from "./bindings/StoredSession";
import { storedNote } from "./stored";

const base: StoredSession = {
  id: 1, session_key: "s", title: null, name: "s", format: "claude-code", path: "/logs/a.jsonl", bytes: 10, agents: 1, calls: 2,
  compactions: 0, model: null, usage_only: false, imported_at: 0, runs: 0, status: "unchanged", problem: null, open: null,
};

describe("storedNote", () => {
  it("offers to open an unchanged log, and says when it is open", () => {
    expect(storedNote(base)).toMatchObject({ label: "ready", tone: "ok", openable: true });
    expect(storedNote({ ...base, open: 3 })).toMatchObject({ label: "open", openable: true });
  });
  it("refuses a log that moved, naming it", () => {
    const n = storedNote({ ...base, status: "missing", problem: "/logs/a.jsonl is no longer there (moved or deleted)" });
    expect(n).toMatchObject({ label: "moved or deleted", tone: "error", openable: false });
    expect(n.hint).toContain("/logs/a.jsonl is no longer there");
  });
  it("reads a changed log again to refresh it", () => {
    expect(storedNote({ ...base, status: "changed" })).toMatchObject({ label: "changed", tone: "warn", openable: true });
  });
});
