// How the Library shows a session of the SQLite library: whether its log is still there and
// unchanged, and what opening it does.

import type { StoredSession } from "./bindings/StoredSession";

export interface StoredNote {
  /** The badge text. */
  label: string;
  tone: "ok" | "warn" | "error";
  /** What the user can do, for the tooltip. */
  hint: string;
  /** Whether a click opens it. */
  openable: boolean;
}

export function storedNote(s: StoredSession): StoredNote {
  switch (s.status) {
    case "unchanged":
      return s.open === null
        ? { label: "ready", tone: "ok", hint: "Click to open it from its log", openable: true }
        : { label: "open", tone: "ok", hint: "Open now: click to show it", openable: true };
    case "missing":
      return { label: "moved or deleted", tone: "error", hint: `${s.problem ?? s.path}. Open the log from where it is now to add it again.`, openable: false };
    case "changed":
      return { label: "changed", tone: "warn", hint: "The log changed since it was imported: click to read it again and refresh the library", openable: true };
    default:
      return { label: s.status, tone: "warn", hint: s.problem ?? "", openable: false };
  }
}
