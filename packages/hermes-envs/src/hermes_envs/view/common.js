// Shared by the hermes-envs and hermes-bench viewer pages: element maker, number
// format, JSON text, a tool output as a shell shows it, the summary, the table of rows
// with its filters and sorting, and the pieces of a transcript.
const el = (tag, attrs, ...kids) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v; else if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v); else node.setAttribute(k, v);
  }
  for (const kid of kids) if (kid !== null && kid !== undefined) node.append(kid);
  return node;
};
const fmt = (x, digits = 3) => x === null || x === undefined ? "—" : (typeof x === "number" ? x.toFixed(digits) : String(x));
function pretty(value) {
  if (typeof value === "string") return value;
  try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); }
}
function toolText(content) {
  // The terminal tool answers {"output": ..., "exit_code": ...}: show it as a shell would.
  if (typeof content === "string" && content.startsWith("{")) {
    try {
      const parsed = JSON.parse(content);
      if (parsed && typeof parsed.output === "string") {
        return parsed.output + (parsed.exit_code !== undefined ? `\n[exit code ${parsed.exit_code}]` : "");
      }
    } catch (e) { /* not JSON: shown as it is */ }
  }
  return pretty(content);
}
const heading = text => el("h2", {style: "margin-top:14px", text});
function facts(pairs) {
  const kv = el("dl", {class: "kv"});
  for (const [k, v] of pairs) kv.append(el("dt", {text: k}), el("dd", {text: v}));
  return kv;
}
const tokensText = usage => `${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion tokens`;
function stepMeta(usage, modelSeconds, toolsSeconds) {
  // A turn's figures: its tokens when known, the model's time, the tools' time when any.
  const meta = [];
  if (usage && usage.prompt_tokens !== undefined) meta.push(tokensText(usage));
  if (modelSeconds !== undefined) meta.push(`model ${Number(modelSeconds).toFixed(2)} s`);
  if (toolsSeconds) meta.push(`tools ${Number(toolsSeconds).toFixed(2)} s`);
  return meta.length ? ` · ${meta.join(" · ")}` : "";
}
function toolCall(name, id, args, output) {
  // One tool call: its name, id and arguments, then its output (undefined: none recorded).
  return el("div", {class: "call"}, el("span", {class: "name", text: name}),
    el("span", {class: "muted", text: `  ${id}`}), el("pre", {}, args),
    output !== undefined ? el("div", {}, el("div", {class: "muted", text: "output"}), el("pre", {class: "tool-output"}, output))
      : el("p", {class: "empty", text: "no output recorded"}));
}
function showSummary(cards, notes) {
  // The run's folder, its summary cards ([label, value, test id]) and its notes.
  document.getElementById("run-folder").textContent = RUN.folder;
  const box = document.getElementById("summary-cards");
  for (const [label, value, id] of cards) {
    box.append(el("div", {class: "card"}, el("div", {class: "label", text: label}),
      el("div", {class: "value", "data-testid": id, text: value})));
  }
  document.getElementById("summary-notes").textContent = notes.join(" ");
}
function rowTable(spec) {
  // The table of the run's rows (rollouts or trials) in the section #list, with a status
  // filter, a search box, sorting on a clicked column and one row shown in #detail.
  // spec: title, id (the table's), noun and one (the rows' name, plural and singular; one
  // also names the row's data attribute and the location key of the row shown),
  // statuses ([value, label]), hint (the search
  // box's), columns ([key, label]), sortKey, rows, key(row), hasStatus(row, status),
  // searchText(row), tie(a, b) (the order of rows equal on the sorted key),
  // cells(row) (its td elements), detail(row, box) (fills #detail).
  const status = el("select", {id: "filter-status", "data-testid": "filter-status"},
    ...[["", "all"], ...spec.statuses].map(([value, label]) => el("option", {value, text: label})));
  const search = el("input", {id: "filter-text", "data-testid": "filter-text", placeholder: spec.hint});
  const count = el("span", {class: "muted", id: "shown-count"});
  const head = el("tr", {}, ...spec.columns.map(([key, label]) => el("th", {class: "sortable", "data-key": key, text: label})));
  const table = el("table", {id: spec.id, class: "rows", "data-testid": spec.id}, el("thead", {}, head), el("tbody"));
  document.getElementById("list").append(el("h2", {text: spec.title}),
    el("div", {class: "filters"}, el("label", {}, "status ", status), el("label", {}, "search ", search), count), table);
  let sortKey = spec.sortKey, sortDir = 1, selected = null;
  function shown() {
    const wanted = status.value, text = search.value.trim().toLowerCase();
    const rows = spec.rows.filter(row => (!wanted || spec.hasStatus(row, wanted))
      && (!text || spec.searchText(row).toLowerCase().includes(text)));
    rows.sort((a, b) => {
      const x = a[sortKey], y = b[sortKey];
      if (x === y) return spec.tie(a, b);
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * sortDir;
    });
    return rows;
  }
  function render() {
    const rows = shown();
    table.tBodies[0].replaceChildren(...rows.map(row => {
      const key = spec.key(row);
      const tr = el("tr", {[`data-${spec.one}`]: key, onclick: () => open(key)}, ...spec.cells(row));
      if (key === selected) tr.classList.add("selected");
      return tr;
    }));
    count.textContent = `${rows.length} of ${spec.rows.length} ${spec.noun}`;
  }
  function open(key) {
    selected = key;
    location.hash = `${spec.one}=` + encodeURIComponent(key);
    render();
    const row = spec.rows.find(row => spec.key(row) === key);
    const box = document.getElementById("detail");
    box.hidden = false;
    box.replaceChildren();
    if (!row) { box.append(el("p", {class: "empty", text: `no ${spec.one} ${key}`})); return; }
    spec.detail(row, box);
    box.scrollIntoView({block: "start"});
  }
  for (const th of head.children) {
    th.addEventListener("click", () => {
      const key = th.dataset.key;
      sortDir = key === sortKey ? -sortDir : 1; sortKey = key;
      for (const other of head.children) other.classList.remove("sorted-asc", "sorted-desc");
      th.classList.add(sortDir > 0 ? "sorted-asc" : "sorted-desc");
      render();
    });
  }
  status.addEventListener("change", render);
  search.addEventListener("input", render);
  render();
  const wanted = decodeURIComponent((location.hash.match(new RegExp(`${spec.one}=([^&]+)`)) || [])[1] || "");
  if (wanted) open(wanted);
}
