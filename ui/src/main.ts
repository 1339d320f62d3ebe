// The app shell: tabs, theme, keyboard shortcuts, drag-and-drop, the status line.

import "./locale"; // first: fixes navigator.language before uPlot reads it
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { getCurrentWebview } from "@tauri-apps/api/webview";
import { api } from "./api";
import { clear, h } from "./dom";
import { changed, onChange, store, type View } from "./store";
import { cancelRun, renderCompare, runComparison } from "./views/compare";
import { renderExport } from "./views/export";
import { openFileDialog, openPaths, refreshStored, renderLibrary, selectSession, setNavigator } from "./views/library";
import { renderSession } from "./views/session";
import { cancelTune, renderTune } from "./views/tune";

const TABS: [View, string, string][] = [
  ["library", "Library", "Alt+1"],
  ["session", "Session", "Alt+2"],
  ["compare", "Replay / Compare", "Alt+3"],
  ["tune", "Tune", "Alt+4"],
  ["export", "Export", "Alt+5"],
];

const SHORTCUTS: [string, string][] = [
  ["Ctrl+O", "Open a log"],
  ["Ctrl+Shift+O", "Open a folder"],
  ["Alt+1 … Alt+5", "Library, Session, Compare, Tune, Export"],
  ["Ctrl+Enter", "Replay the picked strategies"],
  ["Esc", "Cancel a running replay or sweep / close this help"],
  ["Ctrl+Shift+L", "Light / dark theme"],
  ["?", "This help"],
];

const app = document.getElementById("app")!;
const nav = h("nav.tabs");
const main = h("main.content");
const status = h("footer.status", { testid: "status" });
let help = false;

function go(v: View) {
  store.view = v;
  changed();
}
setNavigator(go);

function theme(): "dark" | "light" {
  return (localStorage.getItem("theme") as "dark" | "light" | null) ?? (matchMedia("(prefers-color-scheme: light)").matches ? "light" : "dark");
}
function applyTheme(t: "dark" | "light") {
  document.documentElement.dataset.theme = t;
  localStorage.setItem("theme", t);
}
function toggleTheme() {
  applyTheme(theme() === "dark" ? "light" : "dark");
  changed();
}

function render() {
  clear(
    nav,
    h("span.brand", {}, "ctxlab"),
    TABS.map(([v, label, key]) => h("button", { class: v === store.view ? "tab active" : "tab", title: key, testid: `tab-${v}`, onclick: () => go(v) }, label)),
    h("span.spacer"),
    store.library.sessions.length
      ? h(
          "select.session-pick",
          { title: "Current session", onchange: (e: Event) => void selectSession(Number((e.target as HTMLSelectElement).value)) },
          store.current === null ? h("option", {}, "— session —") : null,
          store.library.sessions.map((s) => h("option", { value: String(s.key), selected: s.key === store.current, title: s.id }, s.name)),
        )
      : null,
    h("button.ghost", { onclick: toggleTheme, title: "Ctrl+Shift+L", testid: "theme" }, theme() === "dark" ? "☀ Light" : "☾ Dark"),
    h("button.ghost", { onclick: () => ((help = !help), changed()), title: "?" }, "?"),
  );
  const scroll = main.scrollTop;
  switch (store.view) {
    case "library":
      renderLibrary(main);
      break;
    case "session":
      renderSession(main, changed);
      break;
    case "compare":
      renderCompare(main);
      break;
    case "tune":
      renderTune(main);
      break;
    case "export":
      renderExport(main);
      break;
  }
  main.scrollTop = scroll;
  if (help) {
    main.append(
      h(
        "div.help",
        { onclick: () => ((help = false), changed()) },
        h("div.help-card", {}, h("h3", {}, "Keyboard shortcuts"), h("table", {}, SHORTCUTS.map(([k, d]) => h("tr", {}, h("td", {}, h("kbd", {}, k)), h("td", {}, d))))),
      ),
    );
  }
  status.textContent = store.status;
}

document.addEventListener("keydown", (e) => {
  const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement;
  if (e.ctrlKey && e.key.toLowerCase() === "o") {
    e.preventDefault();
    void openFileDialog(e.shiftKey);
  } else if (e.altKey && /^[1-5]$/.test(e.key)) {
    e.preventDefault();
    go(TABS[Number(e.key) - 1][0]);
  } else if (e.ctrlKey && e.key === "Enter") {
    e.preventDefault();
    if (store.view !== "compare") go("compare");
    void runComparison();
  } else if (e.key === "Escape") {
    if (help) {
      help = false;
      changed();
    } else {
      void cancelRun();
      void cancelTune();
    }
  } else if (e.ctrlKey && e.shiftKey && e.key.toLowerCase() === "l") {
    e.preventDefault();
    toggleTheme();
  } else if (e.key === "?" && !typing) {
    help = !help;
    changed();
  }
});

applyTheme(theme());
app.append(nav, main, status);
onChange(render);
render();
void api.startupMark("script").catch(() => false);

/** The next frame after this one is on screen. */
const painted = () => new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())));

async function start() {
  // The startup bench (CTXLAB_BENCH_STARTUP=1) times the first frame and the first chart.
  store.benchStartup = painted().then(() => api.startupMark("painted").catch(() => false));
  try {
    // Logs named on the command line open on the Session view of the first one; the library's
    // list (which hashes every log it names) is read after its chart. The strategies are listed
    // meanwhile.
    const [strategies, opened] = await Promise.all([api.listStrategies(), api.startup()]);
    store.strategies = strategies;
    store.library = await api.library();
    store.openErrors = [...opened.failed, ...store.openErrors];
    if (opened.sessions.length > 0) {
      store.view = "session";
      await selectSession(opened.sessions[0].key);
      await refreshStored();
    } else {
      await refreshStored();
      if (store.library.sessions.length > 0 && store.current === null) await selectSession(store.library.sessions[0].key);
    }
  } catch (e) {
    store.status = `Could not start: ${(e as { message: string }).message}`;
  }
  changed();
  await getCurrentWebview().onDragDropEvent((event) => {
    const p = event.payload;
    document.body.classList.toggle("dragging", p.type === "enter" || p.type === "over");
    if (p.type === "drop" && p.paths.length) {
      store.view = "library";
      void openPaths(p.paths);
    }
  });
}
void start();
